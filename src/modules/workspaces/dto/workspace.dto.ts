import { ApiProperty } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { MaxCodePoints } from '../../../common/validation/field-validators.js';
import { HasNoNulCharacters, IsOptionalNotNull } from '../../../kit/owned/owned-validators.js';
import { ApiTimestamp, ApiUuid } from '../../../common/openapi/api-fields.js';

export const WORKSPACE_NAME_MAX = 200;
export const WORKSPACE_DESCRIPTION_MAX = 2000;

/** POST /api/v1/workspaces. */
export class CreateWorkspaceDto {
  /** Not blank. */
  @IsString()
  @MinLength(1)
  @MaxCodePoints(WORKSPACE_NAME_MAX)
  @Matches(/\S/, { message: 'name must not be blank' })
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: WORKSPACE_NAME_MAX, example: 'Marketing' })
  name!: string;

  /** null or omitted for none. */
  @IsOptional()
  @IsString()
  @MaxLength(WORKSPACE_DESCRIPTION_MAX)
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: WORKSPACE_DESCRIPTION_MAX, example: 'Campaign planning' })
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
  @ApiProperty({ type: String, maxLength: WORKSPACE_NAME_MAX })
  name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(WORKSPACE_DESCRIPTION_MAX)
  @HasNoNulCharacters()
  @ApiProperty({ type: String, maxLength: WORKSPACE_DESCRIPTION_MAX })
  description?: string | null;
}

export class WorkspaceDto {
  @ApiUuid()
  id!: string;
  @ApiUuid()
  user_id!: string;
  @ApiProperty({ type: String, maxLength: WORKSPACE_NAME_MAX, example: 'Marketing' })
  name!: string;
  @ApiProperty({ type: String, example: 'Campaign planning' })
  description!: string | null;
  @ApiTimestamp()
  created_at!: Date;
  @ApiTimestamp()
  updated_at!: Date;
}
