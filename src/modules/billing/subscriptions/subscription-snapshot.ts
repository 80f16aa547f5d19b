import type { SubscriptionStatus } from '../../../generated/prisma/enums.js';
import type { SubscriptionData } from '../intake/billing-events.schema.js';

// A type, not an interface: Prisma's JSON input type needs the implicit index signature.
export type ScheduledChange = {
  action: string;
  effective_at: string;
  resume_at: string | null;
};

/** What a subscription webhook says the subscription looks like now, in our columns. */
export interface SubscriptionSnapshot {
  providerSubscriptionId: string;
  providerCustomerId: string | null;
  status: SubscriptionStatus;
  tier: string;
  priceId: string;
  unitAmount: number | null;
  currency: string | null;
  billingInterval: string | null;
  billingFrequency: number | null;
  quantity: number;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
  canceledAt: Date | null;
  pausedAt: Date | null;
  scheduledChange: ScheduledChange | null;
  /** A change to another paid tier that takes effect at pendingTierAt (see deferTierChange). */
  pendingTier: string | null;
  pendingTierAt: Date | null;
}

const STATUS: Record<SubscriptionData['status'], SubscriptionStatus> = {
  active: 'ACTIVE',
  trialing: 'TRIALING',
  past_due: 'PAST_DUE',
  paused: 'PAUSED',
  canceled: 'CANCELED',
};

/** The state table fixes the resulting status of these events whatever the payload says. */
const STATUS_OF_EVENT: Record<string, SubscriptionStatus> = {
  'subscription.paused': 'PAUSED',
  'subscription.past_due': 'PAST_DUE',
  'subscription.canceled': 'CANCELED',
  'subscription.cancelled': 'CANCELED',
};

export const SUBSCRIPTION_EVENTS = [
  'subscription.created',
  'subscription.updated',
  'subscription.activated',
  'subscription.resumed',
  'subscription.paused',
  'subscription.past_due',
  'subscription.canceled',
  'subscription.cancelled',
] as const;

/** Statuses under which a subscription still grants its tier (until the expiry job says otherwise). */
export const LIVE_STATUSES: SubscriptionStatus[] = ['ACTIVE', 'TRIALING', 'PAST_DUE', 'PAUSED'];

/**
 * Whether a stored subscription grants its tier at `now` (the rule users.current_tier is derived from):
 * live and not expired, or CANCELED with the paid period still running.
 */
export interface AccessFields {
  status: SubscriptionStatus;
  expiredAt: Date | null;
  currentPeriodEnd: Date | null;
}

export function grantsAccess(row: AccessFields, now: Date): boolean {
  if (row.expiredAt) return false;
  if (LIVE_STATUSES.includes(row.status)) return true;
  return (
    row.status === 'CANCELED' && !!row.currentPeriodEnd && row.currentPeriodEnd.getTime() > now.getTime()
  );
}

/** The audit action of an event: the British spelling is folded so one query finds every cancellation. */
export const auditActionOf = (eventType: string): string =>
  eventType === 'subscription.cancelled' ? 'subscription.canceled' : eventType;

/** What the event's envelope and the stored row add to the payload when building a snapshot. */
export interface SnapshotContext {
  /** The event's occurred_at. */
  occurredAt: Date;
  /** canceled_at already stored for this subscription, if any. */
  storedCanceledAt?: Date | null;
}

export function toSnapshot(
  data: SubscriptionData,
  eventType: string,
  tier: string,
  context: SnapshotContext,
): SubscriptionSnapshot {
  const item = data.items[0];
  const price = item.price;
  const cycle = price.billing_cycle ?? data.billing_cycle ?? null;
  const status = STATUS_OF_EVENT[eventType] ?? STATUS[data.status];
  return {
    providerSubscriptionId: data.id,
    providerCustomerId: data.customer_id,
    status,
    tier,
    priceId: price.id,
    unitAmount: price.unit_price?.amount ?? null,
    currency: price.unit_price?.currency_code ?? data.currency_code ?? null,
    billingInterval: cycle?.interval ?? null,
    billingFrequency: cycle?.frequency ?? null,
    quantity: item.quantity ?? 1,
    currentPeriodStart: data.current_billing_period?.starts_at ?? null,
    currentPeriodEnd: data.current_billing_period?.ends_at ?? null,
    canceledAt: canceledAtOf(data, status, context),
    pausedAt: data.paused_at ?? null,
    scheduledChange: data.scheduled_change
      ? {
          action: data.scheduled_change.action,
          effective_at: data.scheduled_change.effective_at.toISOString(),
          resume_at: data.scheduled_change.resume_at?.toISOString() ?? null,
        }
      : null,
    pendingTier: null,
    pendingTierAt: null,
  };
}

/** The stored columns deferTierChange reads. */
export interface StoredTier {
  tier: string;
  currentPeriodStart: Date | null;
  currentPeriodEnd: Date | null;
}

/**
 * Spec operation table: a change to another paid tier (higher or lower) keeps "access at the current tier
 * until current_period_end, then the new price". The provider's subscription.updated after the price change
 * already names the new price for the period that is running, so a snapshot whose price maps to another
 * tier within the same billing period keeps the stored tier and records the new one as pending until the
 * period end. A snapshot of a new period (the renewal), of a period that has already ended, or naming the
 * stored tier again (the change was reverted) applies its tier at once and clears any pending change.
 */
export function deferTierChange(
  snapshot: SubscriptionSnapshot,
  stored: StoredTier,
  now: Date,
): SubscriptionSnapshot {
  const cleared = { ...snapshot, pendingTier: null, pendingTierAt: null };
  if (snapshot.tier === stored.tier) return cleared;
  const end = stored.currentPeriodEnd;
  if (!end || end.getTime() <= now.getTime()) return cleared;
  if (!LIVE_STATUSES.includes(snapshot.status)) return cleared;
  const samePeriod =
    sameInstant(snapshot.currentPeriodStart, stored.currentPeriodStart) &&
    sameInstant(snapshot.currentPeriodEnd, stored.currentPeriodEnd);
  if (!samePeriod) return cleared;
  return { ...snapshot, tier: stored.tier, pendingTier: snapshot.tier, pendingTierAt: end };
}

const sameInstant = (a: Date | null, b: Date | null): boolean =>
  a === null || b === null ? a === b : a.getTime() === b.getTime();

/**
 * The state table says a cancellation "sets canceled_at". A canceled payload without one falls back to
 * the time already stored (a later canceled event must not move it), else to the event's occurred_at.
 */
function canceledAtOf(
  data: SubscriptionData,
  status: SubscriptionStatus,
  context: SnapshotContext,
): Date | null {
  if (data.canceled_at) return data.canceled_at;
  if (status !== 'CANCELED') return null;
  return context.storedCanceledAt ?? context.occurredAt;
}

/**
 * Lifecycle order used only to break ties between events with the same occurred_at (created and
 * activated of one checkout often share it): the later lifecycle stage wins.
 */
const STATUS_RANK: Record<SubscriptionStatus, number> = {
  TRIALING: 0,
  ACTIVE: 1,
  PAST_DUE: 2,
  PAUSED: 3,
  CANCELED: 4,
};

export interface EventKey {
  occurredAt: Date;
  status: SubscriptionStatus;
  eventId: string;
}

/**
 * True when an incoming event must overwrite the stored state. Events are totally ordered by
 * (occurred_at, status rank, event id), so any delivery order of the same events converges on the
 * same row, and an older event never overwrites newer state. The same event is never "newer" than itself.
 */
export function isNewer(incoming: EventKey, stored: EventKey): boolean {
  const dt = incoming.occurredAt.getTime() - stored.occurredAt.getTime();
  if (dt !== 0) return dt > 0;
  const dr = STATUS_RANK[incoming.status] - STATUS_RANK[stored.status];
  if (dr !== 0) return dr > 0;
  return incoming.eventId > stored.eventId;
}

/**
 * expired_at after applying a snapshot: a live state (ACTIVE, TRIALING, and PAST_DUE and PAUSED, which
 * never revoke access) clears an earlier expiry, so a newer live event after an immediate cancel (odd
 * provider data, a replay, a backfill) leaves the row and the user's tier agreeing; a cancellation whose
 * paid period is already over (cancel_immediately) ends access now.
 */
export function expiryAfter(snapshot: SubscriptionSnapshot, previous: Date | null, now: Date): Date | null {
  if (LIVE_STATUSES.includes(snapshot.status)) return null;
  if (snapshot.status === 'CANCELED') {
    const end = snapshot.currentPeriodEnd;
    if (!end || end.getTime() <= now.getTime()) return previous ?? now;
  }
  return previous;
}
