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
  if (!samePeriod(snapshot, stored)) return cleared;
  return { ...snapshot, tier: stored.tier, pendingTier: snapshot.tier, pendingTierAt: end };
}

const sameInstant = (a: Date | null, b: Date | null): boolean =>
  a === null || b === null ? a === b : a.getTime() === b.getTime();

type Period = Pick<StoredTier, 'currentPeriodStart' | 'currentPeriodEnd'>;

const samePeriod = (a: Period, b: Period): boolean =>
  sameInstant(a.currentPeriodStart, b.currentPeriodStart) &&
  sameInstant(a.currentPeriodEnd, b.currentPeriodEnd);

/**
 * What a stored row knows of the event that set its tier for the current billing period (the columns
 * `period_tier_*`): null when unknown (a row from before they existed).
 */
export interface StoredPeriodTier extends StoredTier {
  pendingTier: string | null;
  periodTier: EventKey | null;
}

/**
 * The event that sets the tier of a billing period when its events are applied in order (deferTierChange):
 * an event of the period whose status is live defers to the tier before it, one that is not (CANCELED)
 * applies its own. So the tier is that of the period's latest non-live event, else of its earliest event;
 * every later event of the period only moves the pending tier (to the last one's tier, or none when that is
 * the tier). A row stores the key of that event (`period_tier_*`) so that an event delivered late can put
 * the tier where in-order delivery leaves it (correctTierOfPeriod).
 *
 * periodTierAfter: the key stored after a NEWER event was applied. An insert and an event of another period
 * start the period's record with their own key; within the period a non-live event replaces it, a live
 * one (deferred, or naming the tier again) keeps it. An unknown key (null) stays unknown, but for a
 * non-live event, which sets the tier whatever came before it.
 */
export function periodTierAfter(
  snapshot: SubscriptionSnapshot,
  stored: StoredPeriodTier | null,
  key: EventKey,
): EventKey | null {
  if (!stored || !samePeriod(snapshot, stored)) return key;
  return LIVE_STATUSES.includes(snapshot.status) ? stored.periodTier : key;
}

/** A late event's correction of the stored tier (see correctTierOfPeriod). */
export interface TierCorrection {
  tier: string;
  pendingTier: string | null;
  pendingTierAt: Date | null;
  periodTier: EventKey;
}

/**
 * An event OLDER than the stored state (skipped as stale: status, dates and price stay newer-wins) may still
 * be the one that sets the tier of the running period in event order: an event of the same period (same
 * start and end) that is earlier than the stored period-tier event while that one is live (a
 * subscription.created delivered after the subscription.updated of a price change), or a non-live one
 * later than it or while it is live. It then gives the tier as in-order delivery would: its tier, with the latest tier known
 * (`pendingTier ?? tier`, the tier of the newest event) pending until the period end unless it is the same
 * tier, and it becomes the period-tier event. Null when it changes nothing: an unknown period-tier event
 * (a row from before the columns: its tier may come from an event older than anything it records), another
 * period, a period without an end or already over (in event order its pending tier has taken effect by
 * now), or an event that is not the one setting the tier.
 */
export function correctTierOfPeriod(
  snapshot: SubscriptionSnapshot,
  key: EventKey,
  stored: StoredPeriodTier,
  now: Date,
): TierCorrection | null {
  const setter = stored.periodTier;
  if (!setter || setter.eventId === key.eventId) return null;
  const end = stored.currentPeriodEnd;
  if (!end || end.getTime() <= now.getTime() || !samePeriod(snapshot, stored)) return null;
  const earlier = isNewer(setter, key);
  const sets = LIVE_STATUSES.includes(snapshot.status)
    ? earlier && LIVE_STATUSES.includes(setter.status)
    : !earlier || LIVE_STATUSES.includes(setter.status);
  if (!sets) return null;
  const latest = stored.pendingTier ?? stored.tier;
  const pendingTier = latest === snapshot.tier ? null : latest;
  return { tier: snapshot.tier, pendingTier, pendingTierAt: pendingTier ? end : null, periodTier: key };
}

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
