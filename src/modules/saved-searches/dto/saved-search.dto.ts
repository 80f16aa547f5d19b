import { IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { MaxCodePoints } from '../../../common/validation/field-validators.js';
import { HasNoNulCharacters, IsJsonObject, IsOptionalNotNull } from '../../owned/owned-validators.js';

export const SAVED_SEARCH_NAME_MAX = 200;
export const SAVED_SEARCH_QUERY_MAX = 10_000;

/** POST /api/v1/saved_searches. The owner is never part of a body (spec rule 2). */
export class CreateSavedSearchDto {
  /** 1..200 characters, not blank. */
  @IsString()
  @MinLength(1)
  @MaxCodePoints(SAVED_SEARCH_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  name!: string;

  /** The search text (may be empty when the filters say it all). */
  @IsString()
  @MaxLength(SAVED_SEARCH_QUERY_MAX)
  @HasNoNulCharacters()
  query!: string;

  /** Free-form JSON object; `{}` when omitted. */
  @IsOptionalNotNull()
  @IsJsonObject()
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
  name?: string;

  @IsOptionalNotNull()
  @IsString()
  @MaxLength(SAVED_SEARCH_QUERY_MAX)
  @HasNoNulCharacters()
  query?: string;

  @IsOptionalNotNull()
  @IsJsonObject()
  filters?: Record<string, unknown>;
}

export class SavedSearchDto {
  id!: string;
  user_id!: string;
  name!: string;
  query!: string;
  filters!: Record<string, unknown>;
  created_at!: Date;
  updated_at!: Date;
}
