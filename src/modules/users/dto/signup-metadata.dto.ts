import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';

/** No control characters: the values end up in admin screens and CSV exports. */
const PRINTABLE = /^[^\p{Cc}]*$/u;
/** Characters per field, what the validator refuses beyond and what the schema says. */
export const SIGNUP_METADATA_MAX = 500;

/** An optional attribution field: a string of at most SIGNUP_METADATA_MAX characters, none a control character. */
const AttributionText = (example?: string): PropertyDecorator =>
  applyDecorators(
    IsOptional(),
    IsString(),
    MaxLength(SIGNUP_METADATA_MAX),
    Matches(PRINTABLE, { message: '$property must not contain control characters' }),
    ApiProperty({
      type: String,
      required: false,
      maxLength: SIGNUP_METADATA_MAX,
      ...(example === undefined ? {} : { example }),
    }),
  );

/** First-touch attribution the frontend cached at landing; every field optional. */
export class SignupMetadataDto {
  @AttributionText('newsletter')
  utm_source?: string;

  @AttributionText('email')
  utm_medium?: string;

  @AttributionText('launch-2026')
  utm_campaign?: string;

  @AttributionText()
  utm_term?: string;

  @AttributionText()
  utm_content?: string;

  /** The document.referrer of the first visit. */
  @AttributionText('https://news.example.com/')
  referrer?: string;

  /** The URL or path the visitor first landed on. */
  @AttributionText('/pricing')
  landing_page?: string;

  /** Where the user came from in product terms (e.g. `lead_magnet:pricing-guide`); lead-magnet metrics match its prefix. */
  @AttributionText('lead_magnet:pricing-guide')
  provenance?: string;
}

export class SignupMetadataResultDto {
  /** false when attribution had been recorded before: nothing changed. */
  @ApiProperty({ example: true })
  recorded!: boolean;
}
