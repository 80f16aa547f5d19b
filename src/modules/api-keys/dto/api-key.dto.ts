import { IsISO8601, IsOptional, IsString, Matches, MinLength } from 'class-validator';
import { MaxCodePoints } from '../../../common/validation/field-validators.js';
import { HasNoNulCharacters } from '../../owned/owned-validators.js';

export const API_KEY_NAME_MAX = 200;

/** POST /api/v1/api_keys. */
export class CreateApiKeyDto {
  /** 1..200 characters, not blank; helps the owner recognise the key later. */
  @IsString()
  @MinLength(1)
  @MaxCodePoints(API_KEY_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  name!: string;

  /** ISO 8601 date-time in the future; omitted or null: the key does not expire. */
  @IsOptional()
  @IsISO8601({ strict: true, strictSeparator: true })
  expires_at?: string | null;
}

/** An API key as listed: never the secret, only its visible prefix. */
export class ApiKeyDto {
  id!: string;
  user_id!: string;
  name!: string;
  /** Visible part of the key, e.g. `sk_live_3f9a0c1b2d4e`, to tell keys apart. */
  prefix!: string;
  created_at!: Date;
  updated_at!: Date;
  /** Recorded at most once a minute. */
  last_used_at!: Date | null;
  expires_at!: Date | null;
  revoked_at!: Date | null;
}

/** The create response: the only time the full key is ever shown. */
export class CreatedApiKeyDto extends ApiKeyDto {
  /** The full key, to send as `Authorization: Bearer <secret>`. Store it now: it cannot be shown again. */
  secret!: string;
}
