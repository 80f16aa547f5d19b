import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { HasNoNul } from '../../../common/validation/field-validators.js';
import { ApiInt, ApiTimestamp, ApiUuid } from '../../../common/openapi/api-fields.js';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/** In-app feedback widget. The owner comes from the principal, never from the body. */
export class CreateFeedbackDto {
  /** 1 to 5000 characters (surrounding whitespace ignored). */
  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(5000)
  @HasNoNul()
  @ApiProperty({ type: String, example: 'The export button is hard to find.' })
  message!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(5)
  @ApiInt({ minimum: 1, maximum: 5, example: 4 })
  rating?: number;

  /** The page or screen the feedback was given on. */
  @IsOptional()
  @Transform(trim)
  @IsString()
  @MaxLength(500)
  @HasNoNul()
  @ApiProperty({ type: String, example: '/settings/account' })
  page?: string;
}

export class FeedbackResponseDto {
  @ApiUuid()
  id!: string;
  @ApiProperty({ type: String, example: 'The export button is hard to find.' })
  message!: string;
  @ApiInt({ minimum: 1, maximum: 5, example: 4 })
  rating!: number | null;
  @ApiProperty({ type: String, example: '/settings/account' })
  page!: string | null;
  @ApiTimestamp()
  created_at!: string;
}
