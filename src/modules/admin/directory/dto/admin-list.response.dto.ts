import { ApiProperty } from '@nestjs/swagger';
import { ApiEmail, ApiInt, ApiTier, ApiTimestamp, ApiUuid } from '../../../../common/openapi/api-fields.js';
export class AdminUserItemDto {
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
  @ApiProperty({ type: String, example: 'en' })
  locale!: string;
  email_disposable!: boolean;
  provenance!: string | null;
  utm_source!: string | null;
  utm_medium!: string | null;
  utm_campaign!: string | null;
  @ApiTimestamp()
  created_at!: string;
  @ApiTimestamp()
  last_active_at!: string | null;
  @ApiTimestamp()
  deleted_at!: string | null;
}

export class AdminUserListDto {
  items!: AdminUserItemDto[];
  @ApiInt()
  total!: number;
  @ApiInt({ minimum: 1 })
  page!: number;
  @ApiInt({ minimum: 1 })
  page_size!: number;
}

export class AuditItemDto {
  @ApiUuid()
  id!: string;
  @ApiProperty({ type: String, example: 'user:user_2abcDEF3ghiJKL4mnoPQR5stu' })
  actor!: string;
  @ApiProperty({ type: String, example: 'subscription.created' })
  action!: string;
  user_id!: string | null;
  resource_type!: string | null;
  resource_id!: string | null;
  details!: Record<string, unknown>;
  @ApiProperty({ type: String, example: '0f8e3c52-4a8f-4c57-9a8e-4c0d2f1b7e61' })
  request_id!: string | null;
  @ApiTimestamp()
  created_at!: string;
}

export class AuditListDto {
  items!: AuditItemDto[];
  @ApiInt()
  total!: number;
  @ApiInt({ minimum: 1 })
  page!: number;
  @ApiInt({ minimum: 1 })
  page_size!: number;
}
