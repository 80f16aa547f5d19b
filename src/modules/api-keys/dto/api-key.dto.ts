import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches, MinLength } from 'class-validator';
import { MaxCodePoints } from '../../../common/validation/field-validators.js';
import { OptionalInstant } from '../../../common/validation/time-range.js';
import { HasNoNulCharacters } from '../../../kit/owned/owned-validators.js';
import { ApiTimestamp, ApiUuid } from '../../../common/openapi/api-fields.js';

export const API_KEY_NAME_MAX = 200;

/** POST /api/v1/api_keys. */
export class CreateApiKeyDto {
  /** Not blank; helps the owner recognise the key later. */
  @IsString()
  @MinLength(1)
  @MaxCodePoints(API_KEY_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: API_KEY_NAME_MAX, example: 'CI deploy script' })
  name!: string;

  /** ISO 8601 date-time in the future; omitted or null: the key does not expire. */
  @OptionalInstant()
  expires_at?: string | null;
}

/** An API key as listed: never the secret, only its visible prefix. */
export class ApiKeyDto {
  @ApiUuid()
  id!: string;
  @ApiUuid()
  user_id!: string;
  @ApiProperty({ type: String, maxLength: API_KEY_NAME_MAX, example: 'CI deploy script' })
  name!: string;
  /** Visible part of the key, e.g. `sk_live_3f9a0c1b2d4e`, to tell keys apart. */
  @ApiProperty({ type: String, example: 'sk_live_3f9a0c1b2d4e' })
  prefix!: string;
  @ApiTimestamp()
  created_at!: Date;
  @ApiTimestamp()
  updated_at!: Date;
  /** Recorded at most once a minute. */
  @ApiTimestamp()
  last_used_at!: Date | null;
  @ApiTimestamp()
  expires_at!: Date | null;
  @ApiTimestamp()
  revoked_at!: Date | null;
}

/** The create response: the only time the full key is ever shown. */
export class CreatedApiKeyDto extends ApiKeyDto {
  /** The full key, to send as `Authorization: Bearer <secret>`. Store it now: it cannot be shown again. */
  @ApiProperty({ type: String, example: 'sk_live_3f9a0c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f506' })
  secret!: string;
}
