import { OptionalInstant } from '../../../common/validation/time-range.js';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsOptional,
  IsString,
  Matches,
} from 'class-validator';
import { NestedDto } from '../../../common/validation/nested.js';
import { TEMPLATE_KEYS } from '../../email/email.templates.js';

/** A small, validated filter; every given criterion must match (AND). `{}` means every active user. */
export class AudienceDto {
  @ApiPropertyOptional({ example: ['PRO', 'TEAM'], description: 'Current tiers (from the project config).' })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @Matches(/^[A-Z][A-Z0-9_]{0,31}$/, { each: true, message: 'each tier must be an upper-case tier name' })
  tiers?: string[];

  @ApiPropertyOptional({
    example: ['de', 'en-GB'],
    description: 'Locales; a language (`de`) also matches its regional variants (`de-AT`).',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @IsString({ each: true })
  @Matches(/^[a-zA-Z]{2,3}(?:[-_][a-zA-Z0-9]{2,8})*$/, {
    each: true,
    message: 'each locale must look like en or de-AT',
  })
  locales?: string[];

  @ApiPropertyOptional({ description: 'Signed up at or after this instant (ISO 8601).' })
  @OptionalInstant()
  signed_up_after?: string;

  @ApiPropertyOptional({ description: 'Signed up before this instant (ISO 8601, exclusive).' })
  @OptionalInstant()
  signed_up_before?: string;
}

export class CreateBroadcastDto {
  @ApiProperty({ type: String, enum: TEMPLATE_KEYS, example: 'newsletter' })
  @IsString()
  @Matches(/^[a-z0-9_]{1,64}$/, { message: 'template_key must be a template name' })
  template_key!: string;

  @ApiProperty({ type: AudienceDto })
  @IsDefined()
  @NestedDto(() => AudienceDto)
  audience!: AudienceDto;

  @ApiPropertyOptional({
    default: false,
    description:
      'Transactional templates only: also reach users without marketing consent. Marketing + true is 409.',
  })
  @IsOptional()
  @IsBoolean()
  bypass_consent?: boolean;
}
