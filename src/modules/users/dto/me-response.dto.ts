import { ApiProperty } from '@nestjs/swagger';
import {
  ApiEmail,
  ApiEnum,
  ApiInt,
  ApiTier,
  ApiTimestamp,
  ApiUuid,
  SUBSCRIPTION_STATUSES,
} from '../../../common/openapi/api-fields.js';
/** The subscription shown on /me (the newest one), or null. */
export class MeSubscriptionDto {
  @ApiEnum(SUBSCRIPTION_STATUSES)
  status!: string;
  @ApiTimestamp()
  current_period_end!: string | null;
  @ApiTimestamp()
  canceled_at!: string | null;
}

/** GET /api/v1/me (field names fixed by DESIGN.md section 5b). */
export class MeResponseDto {
  @ApiUuid()
  id!: string;
  @ApiProperty({ type: String, example: 'user_2abcDEF3ghiJKL4mnoPQR5stu' })
  identity_user_id!: string;
  @ApiEmail()
  email!: string;
  @ApiTier()
  current_tier!: string;
  @ApiInt({ example: 1000 })
  credit_balance!: number;
  marketing_consent_given!: boolean;
  @ApiTimestamp()
  marketing_consent_at!: string | null;
  @ApiProperty({ type: String, example: 'account_settings' })
  marketing_consent_source!: string | null;
  @ApiProperty({ type: String, example: 'en' })
  locale!: string;
  /** Whether first-touch attribution was recorded (it is set once). */
  attribution_recorded!: boolean;
  /** Set while the account is scheduled for deletion. */
  @ApiTimestamp()
  deleted_at!: string | null;
  /** When a soft-deleted account is erased for good; null otherwise. */
  @ApiTimestamp()
  hard_delete_after!: string | null;
  @ApiTimestamp()
  created_at!: string;
  subscription!: MeSubscriptionDto | null;
}

/** DELETE /api/v1/account/me */
export class DeletionScheduledDto {
  @ApiTimestamp()
  deleted_at!: string;
  @ApiTimestamp()
  hard_delete_after!: string;
}
