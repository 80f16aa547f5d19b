import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { SubscriptionStatus } from '../../../generated/prisma/enums.js';
import { type SubscriptionData, subscriptionSchema } from '../intake/billing-events.schema.js';
import {
  deferTierChange,
  type EventKey,
  expiryAfter,
  grantsAccess,
  isNewer,
  type SubscriptionSnapshot,
  toSnapshot,
} from './subscription-snapshot.js';

const STATUSES: SubscriptionStatus[] = ['TRIALING', 'ACTIVE', 'PAST_DUE', 'PAUSED', 'CANCELED'];

const eventKeys = fc.uniqueArray(
  fc.record({
    occurredAt: fc.integer({ min: 0, max: 3 }).map((s) => new Date(1_800_000_000_000 + s * 1000)),
    status: fc.constantFrom(...STATUSES),
    eventId: fc.stringMatching(/^evt_[0-9a-f]{6}$/),
  }),
  { minLength: 1, maxLength: 8, selector: (e) => e.eventId },
);

/** What the handler does: the first event inserts, later ones overwrite only when newer. */
const replay = (events: EventKey[]) =>
  events.reduce((stored, next) => (isNewer(next, stored) ? next : stored));

describe('event ordering', () => {
  it('any delivery order of the same events ends in the same state', () => {
    fc.assert(
      fc.property(
        eventKeys.chain((events) =>
          fc.tuple(fc.constant(events), fc.shuffledSubarray(events, { minLength: events.length })),
        ),
        ([events, shuffled]) => {
          expect(replay(shuffled)).toBe(replay(events));
        },
      ),
    );
  });

  it('never lets an older event win and never re-applies the same event', () => {
    const base: EventKey = { occurredAt: new Date(2000), status: 'ACTIVE', eventId: 'evt_b' };
    expect(isNewer({ ...base, occurredAt: new Date(1000), status: 'CANCELED' }, base)).toBe(false);
    expect(isNewer({ ...base, occurredAt: new Date(3000), status: 'TRIALING' }, base)).toBe(true);
    expect(isNewer(base, base)).toBe(false);
    // Same instant: the later lifecycle stage wins (trialing created vs active activated).
    expect(isNewer({ ...base, status: 'TRIALING', eventId: 'evt_z' }, base)).toBe(false);
    expect(isNewer({ ...base, status: 'CANCELED', eventId: 'evt_a' }, base)).toBe(true);
  });
});

describe('expiryAfter', () => {
  const now = new Date('2026-11-22T10:00:00Z');
  const snap = (status: SubscriptionStatus, end: Date | null) =>
    ({ status, currentPeriodEnd: end }) as SubscriptionSnapshot;

  it('a live state clears an expiry; an immediate cancellation expires now; otherwise unchanged', () => {
    const earlier = new Date('2026-11-01T00:00:00Z');
    expect(expiryAfter(snap('ACTIVE', null), earlier, now)).toBeNull();
    expect(expiryAfter(snap('TRIALING', null), earlier, now)).toBeNull();
    expect(expiryAfter(snap('CANCELED', null), null, now)).toEqual(now);
    expect(expiryAfter(snap('CANCELED', new Date(now.getTime() - 1)), null, now)).toEqual(now);
    expect(expiryAfter(snap('CANCELED', new Date(now.getTime() + 1)), null, now)).toBeNull();
    expect(expiryAfter(snap('PAST_DUE', null), earlier, now)).toBeNull();
    expect(expiryAfter(snap('PAUSED', null), earlier, now)).toBeNull();
    expect(expiryAfter(snap('CANCELED', new Date(now.getTime() + 1)), earlier, now)).toBe(earlier);
    expect(expiryAfter(snap('PAUSED', null), null, now)).toBeNull();
  });
});

describe('deferTierChange (operation table: access at the current tier until current_period_end)', () => {
  const now = new Date('2026-11-22T10:00:00Z');
  const start = new Date('2026-11-10T00:00:00Z');
  const end = new Date('2026-12-10T00:00:00Z');
  const stored = { tier: 'TEAM', currentPeriodStart: start, currentPeriodEnd: end };
  const snap = (tier: string, over: Partial<SubscriptionSnapshot> = {}) =>
    ({
      status: 'ACTIVE',
      tier,
      currentPeriodStart: start,
      currentPeriodEnd: end,
      pendingTier: null,
      pendingTierAt: null,
      ...over,
    }) as SubscriptionSnapshot;

  it('keeps the stored tier and schedules the new one at the period end within the same period', () => {
    expect(deferTierChange(snap('PRO'), stored, now)).toMatchObject({
      tier: 'TEAM',
      pendingTier: 'PRO',
      pendingTierAt: end,
    });
    expect(deferTierChange(snap('PRO', { status: 'PAST_DUE' }), stored, now).tier).toBe('TEAM');
  });

  it('applies at once: a new period, an ended period, the stored tier again, or a status without access', () => {
    const next = { currentPeriodStart: end, currentPeriodEnd: new Date('2027-01-10T00:00:00Z') };
    expect(deferTierChange(snap('PRO', next), stored, now)).toMatchObject({ tier: 'PRO', pendingTier: null });
    expect(deferTierChange(snap('PRO'), stored, new Date(end.getTime() + 1))).toMatchObject({
      tier: 'PRO',
      pendingTier: null,
    });
    expect(
      deferTierChange(snap('TEAM', { pendingTier: 'PRO', pendingTierAt: end }), stored, now),
    ).toMatchObject({ tier: 'TEAM', pendingTier: null, pendingTierAt: null });
    expect(deferTierChange(snap('PRO', { status: 'CANCELED' }), stored, now).tier).toBe('PRO');
    expect(deferTierChange(snap('PRO', { currentPeriodEnd: null }), stored, now).tier).toBe('PRO');
  });
});

describe('grantsAccess', () => {
  const now = new Date('2026-11-22T10:00:00Z');
  const later = new Date(now.getTime() + 1000);
  it('live and not expired, or canceled with the period still running', () => {
    for (const status of ['ACTIVE', 'TRIALING', 'PAST_DUE', 'PAUSED'] as const) {
      expect(grantsAccess({ status, expiredAt: null, currentPeriodEnd: null }, now)).toBe(true);
      expect(grantsAccess({ status, expiredAt: now, currentPeriodEnd: later }, now)).toBe(false);
    }
    expect(grantsAccess({ status: 'CANCELED', expiredAt: null, currentPeriodEnd: later }, now)).toBe(true);
    expect(grantsAccess({ status: 'CANCELED', expiredAt: null, currentPeriodEnd: now }, now)).toBe(false);
    expect(grantsAccess({ status: 'CANCELED', expiredAt: null, currentPeriodEnd: null }, now)).toBe(false);
  });
});

describe('toSnapshot: canceled_at', () => {
  const occurredAt = new Date('2026-11-22T10:00:00Z');
  const data = (status: string, canceledAt: string | null): SubscriptionData =>
    subscriptionSchema.parse({
      id: 'sub_1',
      status,
      customer_id: 'ctm_1',
      items: [{ price: { id: 'pri_pro' } }],
      canceled_at: canceledAt,
    });

  it('takes canceled_at from the payload when it has one', () => {
    const snapshot = toSnapshot(data('canceled', '2026-11-20T08:00:00Z'), 'subscription.canceled', 'PRO', {
      occurredAt,
    });
    expect(snapshot.canceledAt).toEqual(new Date('2026-11-20T08:00:00Z'));
  });

  it('falls back to the event time for a cancellation without canceled_at (the spec: "set canceled_at")', () => {
    for (const type of ['subscription.canceled', 'subscription.cancelled', 'subscription.updated']) {
      const snapshot = toSnapshot(data('canceled', null), type, 'PRO', { occurredAt });
      expect(snapshot).toMatchObject({ status: 'CANCELED', canceledAt: occurredAt });
    }
    // The event names the status even when the payload lags behind.
    expect(
      toSnapshot(data('active', null), 'subscription.canceled', 'PRO', { occurredAt }).canceledAt,
    ).toEqual(occurredAt);
  });

  it('keeps a canceled_at already stored, and sets none for a subscription that is not canceled', () => {
    const stored = new Date('2026-11-01T00:00:00Z');
    expect(
      toSnapshot(data('canceled', null), 'subscription.canceled', 'PRO', {
        occurredAt,
        storedCanceledAt: stored,
      }).canceledAt,
    ).toEqual(stored);
    expect(
      toSnapshot(data('active', null), 'subscription.updated', 'PRO', { occurredAt }).canceledAt,
    ).toBeNull();
    expect(
      toSnapshot(data('paused', null), 'subscription.paused', 'PRO', { occurredAt }).canceledAt,
    ).toBeNull();
  });
});
