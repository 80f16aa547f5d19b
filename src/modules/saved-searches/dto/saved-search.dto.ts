import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { MaxCodePoints } from '../../../common/validation/field-validators.js';
import { HasNoNulCharacters, IsJsonObject, IsOptionalNotNull } from '../../../kit/owned/owned-validators.js';
import { ApiTimestamp, ApiUuid } from '../../../common/openapi/api-fields.js';

export const SAVED_SEARCH_NAME_MAX = 200;
export const SAVED_SEARCH_QUERY_MAX = 10_000;

/** POST /api/v1/saved_searches. The owner is never part of a body (spec rule 2). */
export class CreateSavedSearchDto {
  /** Not blank. */
  @IsString()
  @MinLength(1)
  @MaxCodePoints(SAVED_SEARCH_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: SAVED_SEARCH_NAME_MAX, example: 'Open roles in Berlin' })
  name!: string;

  /** The search text (may be empty when the filters say it all). */
  @IsString()
  @MaxLength(SAVED_SEARCH_QUERY_MAX)
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: SAVED_SEARCH_QUERY_MAX, example: 'backend engineer' })
  query!: string;

  /** Free-form JSON object; `{}` when omitted. */
  @IsOptionalNotNull()
  @IsJsonObject()
  @ApiProperty({ example: { city: 'Berlin', remote: false } })
  filters?: Record<string, unknown>;
}

/** PATCH /api/v1/saved_searches/{id}: any subset of the mutable fields; only those change. */
export class UpdateSavedSearchDto {
  @IsOptionalNotNull()
  @IsString()
  @MinLength(1)
  @MaxCodePoints(SAVED_SEARCH_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: SAVED_SEARCH_NAME_MAX, example: 'Open roles in Hamburg' })
  name?: string;

  @IsOptionalNotNull()
  @IsString()
  @MaxLength(SAVED_SEARCH_QUERY_MAX)
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: SAVED_SEARCH_QUERY_MAX })
  query?: string;

  @IsOptionalNotNull()
  @IsJsonObject()
  filters?: Record<string, unknown>;
}

export class SavedSearchDto {
  @ApiUuid()
  id!: string;
  @ApiUuid()
  user_id!: string;
  @ApiProperty({ type: String, example: 'Open roles in Berlin' })
  name!: string;
  @ApiProperty({ type: String, example: 'backend engineer' })
  query!: string;
  @ApiProperty({ example: { city: 'Berlin', remote: false } })
  filters!: Record<string, unknown>;
  @ApiTimestamp()
  created_at!: Date;
  @ApiTimestamp()
  updated_at!: Date;
}
