import { OptionalInstant } from '../../../../common/validation/time-range.js';
import { ApiProperty } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { HasNoNul } from '../../../../common/validation/field-validators.js';
import { StrictPageNumberQueryDto, StrictPageQueryDto } from '../../../../common/paging/page-query.dto.js';
import { ApiInt, ApiTier } from '../../../../common/openapi/api-fields.js';

const toBoolean = ({ value }: { value: unknown }) =>
  value === 'true' ? true : value === 'false' ? false : value;

export class ListAdminUsersQueryDto extends StrictPageQueryDto {
  /** E-mail prefix, case-insensitive. */
  @IsOptional()
  @IsString()
  @MaxLength(320)
  @HasNoNul()
  @ApiProperty({ type: String, example: 'ada@' })
  search?: string;

  /** Current tier, e.g. FREE or PRO. */
  @IsOptional()
  @IsString()
  @MaxLength(50)
  @HasNoNul()
  @ApiTier()
  tier?: string;

  /** true: only accounts scheduled for deletion; false: only active accounts; absent: both. */
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  deleted?: boolean;
}

export class ListAuditQueryDto extends StrictPageNumberQueryDto {
  /** Page size, 1..200 (default 50). */
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(200)
  @ApiInt({ minimum: 1, maximum: 200, default: 50 })
  page_size?: number;

  /** Exact action, e.g. user.created. */
  @IsOptional()
  @IsString()
  @MaxLength(100)
  @HasNoNul()
  @ApiProperty({ type: String, example: 'user.created' })
  action?: string;

  /** Exact actor, e.g. user:<identity_user_id> or system:account-deletion. */
  @IsOptional()
  @IsString()
  @MaxLength(300)
  @HasNoNul()
  @ApiProperty({ type: String, example: 'system:account-deletion' })
  actor?: string;

  /** Identity user id the entry is about. */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @HasNoNul()
  user_id?: string;

  @IsOptional()
  @IsString()
  @MaxLength(100)
  @HasNoNul()
  resource_type?: string;

  /** Entries at or after this ISO 8601 time. */
  @OptionalInstant()
  from?: string;

  /** Entries at or before this ISO 8601 time. */
  @OptionalInstant()
  to?: string;
}
