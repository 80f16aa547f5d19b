import { ApiProperty } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import {} from '../../../common/openapi/api-fields.js';

/** No control characters: the values end up in admin screens and CSV exports. */
const PRINTABLE = /^[^\p{Cc}]*$/u;
const MAX = 500;
const printable = (field: string) => ({ message: `${field} must not contain control characters` });

/** First-touch attribution the frontend cached at landing; every field optional, each at most 500 chars. */
export class SignupMetadataDto {
  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('utm_source'))
  @ApiProperty({ type: String, example: 'newsletter' })
  utm_source?: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('utm_medium'))
  @ApiProperty({ type: String, example: 'email' })
  utm_medium?: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('utm_campaign'))
  @ApiProperty({ type: String, example: 'launch-2026' })
  utm_campaign?: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('utm_term'))
  utm_term?: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('utm_content'))
  utm_content?: string;

  /** The document.referrer of the first visit. */
  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('referrer'))
  @ApiProperty({ type: String, example: 'https://news.example.com/' })
  referrer?: string;

  /** The URL or path the visitor first landed on. */
  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('landing_page'))
  @ApiProperty({ type: String, example: '/pricing' })
  landing_page?: string;

  /** Where the user came from in product terms (e.g. `lead_magnet:pricing-guide`); lead-magnet metrics match its prefix. */
  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('provenance'))
  @ApiProperty({ type: String, example: 'lead_magnet:pricing-guide' })
  provenance?: string;
}

export class SignupMetadataResultDto {
  /** false when attribution had been recorded before: nothing changed. */
  @ApiProperty({ example: true })
  recorded!: boolean;
}
