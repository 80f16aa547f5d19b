import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { SubscriptionStatus } from '../../../generated/prisma/enums.js';
import { type SubscriptionData, subscriptionSchema } from '../intake/billing-events.schema.js';
import {
  correctTierOfPeriod,
  deferTierChange,
  type EventKey,
  expiryAfter,
  grantsAccess,
  isNewer,
  periodTierAfter,
  type StoredPeriodTier,
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

describe('the tier of a period whatever the delivery order (periodTierAfter, correctTierOfPeriod)', () => {
  const now = new Date('2026-11-22T10:00:00Z');
  const at = (s: number) => new Date(now.getTime() - 10 * 86_400_000 + s * 1000);
  const start = new Date('2026-11-10T00:00:00Z');
  const end = new Date('2026-12-10T00:00:00Z');
  const key = (s: number, eventId: string, status: SubscriptionStatus = 'ACTIVE'): EventKey => ({
    occurredAt: at(s),
    status,
    eventId,
  });
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
  const row = (over: Partial<StoredPeriodTier> = {}): StoredPeriodTier => ({
    tier: 'PRO',
    pendingTier: null,
    currentPeriodStart: start,
    currentPeriodEnd: end,
    periodTier: key(10, 'evt_10'),
    ...over,
  });

  it('records the event that sets the period tier: an insert or a new period, then the latest non-live one', () => {
    const k = key(20, 'evt_20');
    expect(periodTierAfter(snap('PRO'), null, k)).toBe(k);
    const next = { currentPeriodStart: end, currentPeriodEnd: new Date('2027-01-10T00:00:00Z') };
    expect(periodTierAfter(snap('PRO', next), row(), k)).toBe(k);
    // Deferred, or naming the tier again: the period's tier still comes from the recorded event.
    expect(periodTierAfter(snap('TEAM'), row(), k)).toEqual(key(10, 'evt_10'));
    expect(periodTierAfter(snap('PRO', { status: 'PAST_DUE' }), row(), k)).toEqual(key(10, 'evt_10'));
    const canceled = key(20, 'evt_20', 'CANCELED');
    expect(periodTierAfter(snap('TEAM', { status: 'CANCELED' }), row(), canceled)).toBe(canceled);
    // Unknown stays unknown, but a non-live event sets the tier whatever came before it.
    expect(periodTierAfter(snap('TEAM'), row({ periodTier: null }), k)).toBeNull();
    expect(periodTierAfter(snap('TEAM', { status: 'CANCELED' }), row({ periodTier: null }), canceled)).toBe(
      canceled,
    );
  });

  it('an earlier event of the running period takes the tier back and leaves the latest one pending', () => {
    // updated TEAM (t10) applied first; the created PRO (t0) comes late.
    const stored = row({ tier: 'TEAM', periodTier: key(10, 'evt_10') });
    expect(correctTierOfPeriod(snap('PRO'), key(0, 'evt_00'), stored, now)).toEqual({
      tier: 'PRO',
      pendingTier: 'TEAM',
      pendingTierAt: end,
      periodTier: key(0, 'evt_00'),
    });
    // A change already pending stays the latest: the late event only replaces the tier in effect.
    const pending = row({ tier: 'TEAM', pendingTier: 'PRO', periodTier: key(10, 'evt_10') });
    expect(correctTierOfPeriod(snap('PRO'), key(0, 'evt_00'), pending, now)).toEqual({
      tier: 'PRO',
      pendingTier: null,
      pendingTierAt: null,
      periodTier: key(0, 'evt_00'),
    });
    // Same tier: only the recorded event moves (a later late event must compare with this one).
    expect(correctTierOfPeriod(snap('TEAM'), key(0, 'evt_00'), stored, now)).toEqual({
      tier: 'TEAM',
      pendingTier: null,
      pendingTierAt: null,
      periodTier: key(0, 'evt_00'),
    });
    // Whatever the late event's status (a created that says past_due), it is the earlier one.
    expect(
      correctTierOfPeriod(snap('PRO', { status: 'PAST_DUE' }), key(0, 'evt_00', 'PAST_DUE'), stored, now)
        ?.tier,
    ).toBe('PRO');
  });

  it('a late non-live event sets the tier after the recorded live one; nothing older than a non-live one counts', () => {
    const canceled = key(15, 'evt_15', 'CANCELED');
    expect(correctTierOfPeriod(snap('TEAM', { status: 'CANCELED' }), canceled, row(), now)).toEqual({
      tier: 'TEAM',
      pendingTier: 'PRO',
      pendingTierAt: end,
      periodTier: canceled,
    });
    const barrier = row({ tier: 'TEAM', pendingTier: 'PRO', periodTier: canceled });
    expect(correctTierOfPeriod(snap('PRO'), key(0, 'evt_00'), barrier, now)).toBeNull();
    expect(
      correctTierOfPeriod(snap('PRO', { status: 'CANCELED' }), key(12, 'evt_12', 'CANCELED'), barrier, now),
    ).toBeNull();
    expect(
      correctTierOfPeriod(snap('PRO', { status: 'CANCELED' }), key(18, 'evt_18', 'CANCELED'), barrier, now)
        ?.tier,
    ).toBe('PRO');
  });

  it('corrects nothing for a later live event, another period, an ended period, or an unknown record', () => {
    const stored = row({ tier: 'TEAM' });
    expect(correctTierOfPeriod(snap('PRO'), key(15, 'evt_15'), stored, now)).toBeNull();
    expect(correctTierOfPeriod(snap('PRO'), key(10, 'evt_10'), stored, now)).toBeNull();
    const other = { currentPeriodStart: new Date('2026-10-10T00:00:00Z'), currentPeriodEnd: start };
    expect(correctTierOfPeriod(snap('PRO', other), key(0, 'evt_00'), stored, now)).toBeNull();
    expect(
      correctTierOfPeriod(snap('PRO', { currentPeriodEnd: null }), key(0, 'evt_00'), stored, now),
    ).toBeNull();
    expect(correctTierOfPeriod(snap('PRO'), key(0, 'evt_00'), stored, new Date(end.getTime()))).toBeNull();
    // A row from before the record: its tier may come from an event older than all it knows (a revert).
    expect(correctTierOfPeriod(snap('PRO'), key(0, 'evt_00'), row({ periodTier: null }), now)).toBeNull();
  });

  /** The stored row as SubscriptionStateService.apply keeps it. */
  interface Row extends StoredPeriodTier {
    pendingTierAt: Date | null;
    last: EventKey;
  }
  interface Delivered {
    key: EventKey;
    snapshot: SubscriptionSnapshot;
  }
  const deliver = (stored: Row | null, { key: k, snapshot }: Delivered): Row => {
    if (!stored) {
      return { ...snapshot, periodTier: periodTierAfter(snapshot, null, k), last: k };
    }
    if (isNewer(k, stored.last)) {
      const next = deferTierChange(snapshot, stored, now);
      return { ...next, periodTier: periodTierAfter(next, stored, k), last: k };
    }
    const correction = correctTierOfPeriod(snapshot, k, stored, now);
    return correction ? { ...stored, ...correction } : stored;
  };
  const tierOf = (r: Row) => ({ tier: r.tier, pendingTier: r.pendingTier, pendingTierAt: r.pendingTierAt });

  // Billing periods in the order they follow each other: one already over, the running one, none (paused),
  // the next.
  const PERIODS: [Date | null, Date | null][] = [
    [new Date('2026-10-10T00:00:00Z'), new Date('2026-11-10T00:00:00Z')],
    [start, end],
    [null, null],
    [end, new Date('2027-01-10T00:00:00Z')],
  ];
  const stories = fc
    .uniqueArray(
      fc.record({
        s: fc.integer({ min: 0, max: 4 }),
        status: fc.constantFrom(...STATUSES),
        eventId: fc.stringMatching(/^evt_[0-9a-f]{4}$/),
        tier: fc.constantFrom('PRO', 'TEAM'),
        nextPeriod: fc.integer({ min: 0, max: 4 }),
      }),
      { minLength: 1, maxLength: 7, selector: (e) => e.eventId },
    )
    .map((drawn) => {
      const keyed = drawn
        .map((e) => ({ ...e, key: key(e.s, e.eventId, e.status) }))
        .sort((a, b) => (isNewer(a.key, b.key) ? 1 : -1));
      // The provider's periods only move forward in event order.
      let period = 0;
      return keyed.map((e, i): Delivered => {
        if (i > 0 && e.nextPeriod === 0) period = Math.min(period + 1, PERIODS.length - 1);
        const [currentPeriodStart, currentPeriodEnd] = PERIODS[period];
        return {
          key: e.key,
          snapshot: snap(e.tier, { status: e.status, currentPeriodStart, currentPeriodEnd }),
        };
      });
    });

  it('any delivery order of the same events, redeliveries included, leaves the in-order tier and pending tier', () => {
    fc.assert(
      fc.property(
        stories.chain((events) =>
          fc.tuple(
            fc.constant(events),
            fc
              .tuple(fc.shuffledSubarray(events, { minLength: events.length }), fc.subarray(events))
              .chain(([all, again]) =>
                fc.shuffledSubarray([...all, ...again], { minLength: all.length + again.length }),
              ),
          ),
        ),
        ([inOrder, delivered]) => {
          const want = inOrder.reduce<Row | null>(deliver, null)!;
          const got = delivered.reduce<Row | null>(deliver, null)!;
          expect(tierOf(got)).toEqual(tierOf(want));
        },
      ),
      { numRuns: 2000 },
    );
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
