export class AdminUserItemDto {
  id!: string;
  identity_user_id!: string;
  email!: string;
  current_tier!: string;
  credit_balance!: number;
  marketing_consent_given!: boolean;
  locale!: string;
  email_disposable!: boolean;
  provenance!: string | null;
  utm_source!: string | null;
  utm_medium!: string | null;
  utm_campaign!: string | null;
  created_at!: string;
  last_active_at!: string | null;
  deleted_at!: string | null;
}

export class AdminUserListDto {
  items!: AdminUserItemDto[];
  total!: number;
  page!: number;
  page_size!: number;
}

export class AuditItemDto {
  id!: string;
  actor!: string;
  action!: string;
  user_id!: string | null;
  resource_type!: string | null;
  resource_id!: string | null;
  details!: Record<string, unknown>;
  request_id!: string | null;
  created_at!: string;
}

export class AuditListDto {
  items!: AuditItemDto[];
  total!: number;
  page!: number;
  page_size!: number;
}
