import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';

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
  utm_source?: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('utm_medium'))
  utm_medium?: string;

  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('utm_campaign'))
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
  referrer?: string;

  /** The URL or path the visitor first landed on. */
  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('landing_page'))
  landing_page?: string;

  /** Where the user came from in product terms (e.g. `lead_magnet:pricing-guide`); lead-magnet metrics match its prefix. */
  @IsOptional()
  @IsString()
  @MaxLength(MAX)
  @Matches(PRINTABLE, printable('provenance'))
  provenance?: string;
}

export class SignupMetadataResultDto {
  /** false when attribution had been recorded before: nothing changed. */
  recorded!: boolean;
}
