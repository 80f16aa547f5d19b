import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';
import {} from '../../../common/openapi/api-fields.js';
import { IsLocale } from '../../../common/validation/locale.js';

/** Optional, but never null: none of these columns is nullable (a null reached the database as a 500). */
const IsOptionalNotNull = () => ValidateIf((_object, value) => value !== undefined);

/** Where consent was given or withdrawn: a short machine label such as `settings_page`. */
const SOURCE = /^[A-Za-z0-9_.:-]+$/;

/** The only fields of the profile a user may change (spec rule 4). */
export class UpdateMeDto {
  /**
   * BCP 47 language tag, e.g. `en` or `de-CH`; stored in canonical form: canonical case (`EN-us` becomes
   * `en-US`) and deprecated codes replaced (`iw` becomes `he`, `in` becomes `id`).
   */
  @IsOptionalNotNull()
  @IsString()
  // A literal: the OpenAPI metadata generator reads maxLength only from one (LOCALE_MAX_LENGTH, 35).
  @MaxLength(35)
  @IsLocale()
  @ApiProperty({ type: String, example: 'de-CH' })
  locale?: string;

  @IsOptionalNotNull()
  @IsBoolean()
  @ApiProperty({ example: true })
  marketing_consent_given?: boolean;

  /** Where the change happened (default `account_settings`); only with marketing_consent_given. */
  @IsOptionalNotNull()
  @IsString()
  @MaxLength(100)
  @Matches(SOURCE, { message: 'marketing_consent_source may hold letters, digits and _ . : - only' })
  @ApiProperty({ type: String, example: 'settings_page' })
  marketing_consent_source?: string;
}
