/** The subscription shown on /me (the newest one), or null. */
export class MeSubscriptionDto {
  status!: string;
  current_period_end!: string | null;
  canceled_at!: string | null;
}

/** GET /api/v1/me (field names fixed by DESIGN.md section 5b). */
export class MeResponseDto {
  id!: string;
  identity_user_id!: string;
  email!: string;
  current_tier!: string;
  credit_balance!: number;
  marketing_consent_given!: boolean;
  marketing_consent_at!: string | null;
  marketing_consent_source!: string | null;
  locale!: string;
  /** Whether first-touch attribution was recorded (it is set once). */
  attribution_recorded!: boolean;
  /** Set while the account is scheduled for deletion. */
  deleted_at!: string | null;
  /** When a soft-deleted account is erased for good; null otherwise. */
  hard_delete_after!: string | null;
  created_at!: string;
  subscription!: MeSubscriptionDto | null;
}

/** DELETE /api/v1/account/me */
export class DeletionScheduledDto {
  deleted_at!: string;
  hard_delete_after!: string;
}
