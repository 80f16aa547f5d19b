import { ApiProperty } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { MaxCodePoints } from '../../../common/validation/field-validators.js';
import { HasNoNulCharacters, IsOptionalNotNull } from '../../../kit/owned/owned-validators.js';
import { ApiTimestamp, ApiUuid } from '../../../common/openapi/api-fields.js';

export const WORKSPACE_NAME_MAX = 200;
export const WORKSPACE_DESCRIPTION_MAX = 2000;

/** POST /api/v1/workspaces. */
export class CreateWorkspaceDto {
  /** 1..200 characters, not blank. */
  @IsString()
  @MinLength(1)
  @MaxCodePoints(WORKSPACE_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  @ApiProperty({ type: String, example: 'Marketing' })
  name!: string;

  /** Up to 2,000 characters; null or omitted for none. */
  @IsOptional()
  @IsString()
  @MaxLength(WORKSPACE_DESCRIPTION_MAX)
  @HasNoNulCharacters()
  @ApiProperty({ type: String, example: 'Campaign planning' })
  description?: string | null;
}

/** PATCH /api/v1/workspaces/{id}: any subset; `description: null` clears it. */
export class UpdateWorkspaceDto {
  @IsOptionalNotNull()
  @IsString()
  @MinLength(1)
  @MaxCodePoints(WORKSPACE_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(WORKSPACE_DESCRIPTION_MAX)
  @HasNoNulCharacters()
  description?: string | null;
}

export class WorkspaceDto {
  @ApiUuid()
  id!: string;
  @ApiUuid()
  user_id!: string;
  @ApiProperty({ type: String, example: 'Marketing' })
  name!: string;
  @ApiProperty({ type: String, example: 'Campaign planning' })
  description!: string | null;
  @ApiTimestamp()
  created_at!: Date;
  @ApiTimestamp()
  updated_at!: Date;
}
