import { ApiProperty } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';
import { ApiEnum, ApiInt } from '../../../common/openapi/api-fields.js';
import { NestedDto } from '../../../common/validation/nested.js';

export const CHAT_ROLES = ['system', 'user', 'assistant'] as const;
export const MAX_MESSAGES = 100;
export const MAX_MESSAGE_CHARS = 100_000;

export class ChatMessageDto {
  @IsIn(CHAT_ROLES)
  @ApiEnum(CHAT_ROLES, { example: 'user' })
  role!: (typeof CHAT_ROLES)[number];

  @IsString()
  @MinLength(1)
  @MaxLength(MAX_MESSAGE_CHARS)
  @ApiProperty({ type: String, minLength: 1, maxLength: MAX_MESSAGE_CHARS, example: 'Say hello.' })
  content!: string;
}

export class CreateCompletionDto {
  /** The conversation, oldest first (1 to 100 messages). */
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_MESSAGES)
  @NestedDto(() => ChatMessageDto, { each: true })
  messages!: ChatMessageDto[];

  /** Upper bound of generated tokens; at most the tier's maxTokensPerRequest (default min(1024, that)). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @ApiInt({ minimum: 1, example: 256 })
  max_tokens?: number;
}
