import { looksInternal } from '../../common/errors/internal-text.js';
import { clipText, storableText } from '../../common/validation/unicode.js';

/**
 * The only keys an audit entry's details may hold (spec rule 4: a curated set, never a request body).
 * Values are primitives or short lists of primitives; anything else is dropped.
 */
export const AUDIT_DETAIL_KEYS = [
  'fields_changed',
  'created_via',
  'source',
  'reason',
  'tier',
  'previous_tier',
  'target_tier',
  'status',
  'previous_status',
  'cancel_immediately',
  'effective_from',
  'event_id',
  'event_type',
  'provider',
  'error',
  'template',
  'kind',
  'locale',
  'bypass_consent',
  'audience_tiers',
  'audience_locales',
  'audience_signed_up_after',
  'audience_signed_up_before',
  'broadcast_id',
  'consent_given',
  'consent_at',
  'recipients',
  'sent',
  'failed',
  'skipped',
  'pending',
  'count',
  'amount',
  'currency',
  'credits',
  'withheld',
  'job_id',
  'method',
  'path',
  'via',
  'deleted_at',
  'hard_delete_after',
  'subscription_id',
  'transaction_id',
  'adjustment_id',
  'origin',
  'price_id',
  'billing_cycle',
  'action',
  'expires_at',
  'checkout_token_expired_at',
  'subscription_tier',
  'previous_subscription_tier',
  'pending_tier',
  'effective_at',
  'other_subscription_id',
  'body_digest',
  'prefix',
  'previous_holder',
  'consent_given',
  'consent_at',
] as const;

export type AuditDetailKey = (typeof AUDIT_DETAIL_KEYS)[number];
export type AuditDetailValue = string | number | boolean | null | (string | number | boolean)[];
export type AuditDetails = Partial<Record<AuditDetailKey, AuditDetailValue>>;

export const INTERNAL_REMOVED = '[internal error text removed]';
const ALLOWED = new Set<string>(AUDIT_DETAIL_KEYS);
const MAX_STRING = 500;
const MAX_LIST = 50;

const clip = (value: unknown): string | number | boolean | null | undefined => {
  if (value === null) return null;
  // Whatever a caller passes, no stack trace, file path or SQL is stored (admins and exports read these).
  // A NUL or unpaired surrogate from the source written as an escape (jsonb refuses both, and a refused
  // detail would fail the audited write itself), then clipped whole (never half a surrogate pair).
  if (typeof value === 'string') {
    return looksInternal(value) ? INTERNAL_REMOVED : clipText(storableText(value), MAX_STRING);
  }
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'boolean') return value;
  return undefined;
};

/**
 * Keeps allowlisted keys with primitive (or list-of-primitive) values; drops everything else. Every
 * write of audit_logs goes through it: AuditService.record, and AuditService.recordManyPart (the bulk insert
 * of a broadcast page).
 */
export function curateDetails(details: object | undefined): Record<string, AuditDetailValue> {
  const out: Record<string, AuditDetailValue> = {};
  if (!details) return out;
  for (const [key, value] of Object.entries(details)) {
    if (!ALLOWED.has(key)) continue;
    if (Array.isArray(value)) {
      const items = value
        .slice(0, MAX_LIST)
        .map(clip)
        .filter((v): v is string | number | boolean => v !== undefined && v !== null);
      out[key] = items;
      continue;
    }
    const clipped = clip(value);
    if (clipped !== undefined) out[key] = clipped;
  }
  return out;
}

/** Sorted names of the fields an update changed (the spec's `fields_changed`). */
export const fieldsChanged = (patch: object): string[] =>
  Object.entries(patch)
    .filter(([, value]) => value !== undefined)
    .map(([key]) => key)
    .sort();
