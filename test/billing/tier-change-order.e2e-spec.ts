import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import { AllowanceService } from '../../src/modules/billing/jobs/allowance.service.js';
import { BillingBackfillService } from '../../src/modules/billing/jobs/billing-backfill.service.js';
import { BillingDriftService } from '../../src/modules/billing/jobs/billing-drift.service.js';
import { fixture } from '../contracts/contract-support.js';
import type { FakeBillingApi } from '../fakes/billing-api.js';
import {
  billingApiWorld,
  checkoutToken,
  DAY,
  deliver,
  newSubId,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import type { ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/**
 * A change to another paid tier keeps the tier until the period end (SPEC operation table, DESIGN 5c), and
 * any delivery order of the same events ends in the same row (docs/decisions/billing.md, "Ordering and
 * concurrency"). The defect: the subscription.updated of a mid-period price change, applied before the event
 * that opened its period (a late subscription.created, a drop the backfill recovers), applied the new tier at
 * once, and the late event, older, was ignored. Signed events through the receiver and a real worker.
 */

/** Paddle's published cycles: the annual plan (subscription.trialing mock) and the monthly one. */
type Published = { data: { items: { price: { billing_cycle: { interval: string; frequency: number } } }[] } };
const YEARLY = fixture<Published>('paddle', 'node-sdk.subscription-trialing').data.items[0].price
  .billing_cycle;
const MONTHLY = fixture<Published>('paddle', 'node-sdk.subscription-created').data.items[0].price
  .billing_cycle;

type Tier = 'PRO' | 'TEAM';
const PRICES = {
  month: { PRO: 'pri_pro', TEAM: 'pri_team' },
  year: { PRO: 'pri_pro_y', TEAM: 'pri_team_y' },
} as const;
const CREDITS: Record<Tier, number> = { PRO: 1000, TEAM: 5000 };
const AMOUNT: Record<Tier, string> = { PRO: '1500', TEAM: '5000' };

/** Every ordering of a list (n! of them). */
function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

describe('billing: a mid-period tier change converges under every delivery order', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    ({ env, api, worker, billing } = await billingApiWorld({
      BILLING_PRICE_TIERS: `${PRICES.month.PRO}:PRO:month,${PRICES.month.TEAM}:TEAM:month,${PRICES.year.PRO}:PRO:year,${PRICES.year.TEAM}:TEAM:year`,
    }));
  });
  afterAll(() => env.close());

  type Event = ReturnType<typeof subscriptionEvent> | ReturnType<typeof transactionEvent>;

  /**
   * subscription.created on `from`, its first payment, and a subscription.updated in the same billing period
   * naming `to`'s price (the provider's answer to a change), not sent.
   */
  async function changeStory(cycle: 'month' | 'year', from: Tier, to: Tier) {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const annual = cycle === 'year';
    const start = new Date(Date.now() - (annual ? 100 : 10) * DAY);
    const end = new Date(start.getTime() + (annual ? 365 : 30) * DAY);
    const billingCycle = annual ? YEARLY : MONTHLY;
    const token = checkoutToken(api, user, from, start);
    const sub = (type: string, tier: Tier, occurredAt: Date) =>
      subscriptionEvent({
        type,
        subId,
        priceId: PRICES[cycle][tier],
        unitAmount: AMOUNT[tier],
        billingCycle,
        occurredAt,
        periodStart: start,
        periodEnd: end,
        // Paddle keeps custom_data on the subscription: every event of it carries the checkout token, so
        // whichever comes first creates the row (none is parked and replayed in event order).
        token,
      });
    const events = {
      created: sub('subscription.created', from, start),
      payment: transactionEvent({
        subId,
        priceId: PRICES[cycle][from],
        origin: 'web',
        total: AMOUNT[from],
        token,
        occurredAt: new Date(start.getTime() + 1000),
      }),
      change: sub('subscription.updated', to, new Date(start.getTime() + (annual ? 10 : 5) * DAY)),
    };
    return { user, subId, start, end, token, events };
  }

  const row = (subId: string) =>
    api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
  const userTier = async (user: User) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier;

  /** What the promise covers: the row's tier fields, the user's tier, the grants (ids without the story's). */
  async function stateOf(user: User, subId: string) {
    const r = await row(subId);
    const ledger = await api.prisma.creditTransaction.findMany({ where: { userId: user.id } });
    const archive = await api.prisma.webhookEvent.findMany({
      where: {
        OR: [
          { payload: { path: ['data', 'id'], equals: subId } },
          { payload: { path: ['data', 'subscription_id'], equals: subId } },
        ],
      },
    });
    return {
      status: r.status,
      tier: r.tier,
      priceId: r.priceId,
      pendingTier: r.pendingTier,
      pendingTierAt: r.pendingTierAt,
      userTier: await userTier(user),
      ledger: ledger.map((l) => `${l.kind} ${l.jobId.split(subId).join('<S>')} ${l.delta}`).sort(),
      archive: archive.map((a) => a.status).filter((s) => s !== 'PROCESSED' && s !== 'SKIPPED'),
    };
  }

  async function deliverAll(events: Event[]) {
    for (const event of events) {
      const { outcome } = await deliver(api, event);
      expect(['processed', 'skipped']).toContain(outcome);
    }
  }

  for (const [from, to] of [
    ['PRO', 'TEAM'],
    ['TEAM', 'PRO'],
  ] as const) {
    it(`monthly ${from} -> ${to}: every order of created, first payment, change keeps ${from} with ${to} pending`, async () => {
      const orders = permutations<'created' | 'payment' | 'change'>(['created', 'payment', 'change']);
      for (const order of orders) {
        const s = await changeStory('month', from, to);
        await deliverAll(order.map((name) => s.events[name]));
        expect({ order, ...(await stateOf(s.user, s.subId)) }).toEqual({
          order,
          status: 'ACTIVE',
          tier: from,
          priceId: PRICES.month[to],
          pendingTier: to,
          pendingTierAt: s.end,
          userTier: from,
          ledger: [`grant first-period:<S> ${CREDITS[from]}`],
          archive: [],
        });
      }
    });

    it(`annual ${from} -> ${to}: every order ends in the in-order row and the allowance job grants ${from}'s months`, async () => {
      const allowance = () => worker.get(AllowanceService).run(new Date());
      const orders = permutations<'created' | 'payment' | 'change'>(['created', 'payment', 'change']);
      for (const order of orders) {
        const s = await changeStory('year', from, to);
        await deliverAll(order.map((name) => s.events[name]));
        await allowance();
        // Months 1..3 of the period (started 100 days ago) are due, at the tier in effect.
        const months = [1, 2, 3].map(
          (m) => `grant allowance:<S>:${s.start.toISOString()}:${m} ${CREDITS[from]}`,
        );
        expect({ order, ...(await stateOf(s.user, s.subId)) }).toEqual({
          order,
          status: 'ACTIVE',
          tier: from,
          priceId: PRICES.year[to],
          pendingTier: to,
          pendingTierAt: s.end,
          userTier: from,
          ledger: [`grant first-period:<S> ${CREDITS[from]}`, ...months].sort(),
          archive: [],
        });
      }
    });
  }

  it('the late subscription.created that corrects the tier is processed and audited with its reason', async () => {
    const s = await changeStory('month', 'PRO', 'TEAM');
    expect((await deliver(api, s.events.change)).outcome).toBe('processed');
    expect(await userTier(s.user)).toBe('TEAM');
    expect((await deliver(api, s.events.created)).outcome).toBe('processed');
    const r = await row(s.subId);
    expect(r).toMatchObject({
      tier: 'PRO',
      pendingTier: 'TEAM',
      // Newer-wins for everything else: the change's event is still the newest applied.
      lastEventId: s.events.change.event_id,
      periodTierEventId: s.events.created.event_id,
    });
    const [audit] = await api.prisma.auditLog.findMany({
      where: { action: 'subscription.created', resourceId: r.id },
    });
    expect(audit.details).toMatchObject({
      reason: 'stale_event_tier_corrected',
      tier: 'PRO',
      previous_tier: 'TEAM',
    });
  });

  /** created PRO, a change to TEAM, and the change taken back (PRO again), all in one period. */
  async function revertStory() {
    const s = await changeStory('month', 'PRO', 'TEAM');
    const revert = subscriptionEvent({
      type: 'subscription.updated',
      subId: s.subId,
      priceId: PRICES.month.PRO,
      billingCycle: MONTHLY,
      occurredAt: new Date(s.start.getTime() + 6 * DAY),
      periodStart: s.start,
      periodEnd: s.end,
      token: s.token,
    });
    return { ...s, revert };
  }

  it('a change taken back: every order ends on PRO with nothing pending; redeliveries change nothing', async () => {
    const orders = permutations<'created' | 'change' | 'revert'>(['created', 'change', 'revert']);
    for (const order of orders) {
      const s = await revertStory();
      const events = { created: s.events.created, change: s.events.change, revert: s.revert };
      await deliverAll(order.map((name) => events[name]));
      const want = {
        order,
        tier: 'PRO',
        pendingTier: null,
        pendingTierAt: null,
        userTier: 'PRO',
      };
      const state = async () => {
        const { tier, pendingTier, pendingTierAt, userTier } = await stateOf(s.user, s.subId);
        return { order, tier, pendingTier, pendingTierAt, userTier };
      };
      expect(await state()).toEqual(want);
      // Paddle's retries: the same event ids under new notification ids.
      for (const name of order) {
        const again = { ...events[name], notification_id: `ntf_again_${name}_${s.subId}` };
        expect((await deliver(api, again)).outcome).toBe('duplicate');
      }
      expect(await state()).toEqual(want);
    }
  });

  it('a row from before the period-tier record is never corrected by a late event (its tier may be a revert)', async () => {
    // Control: the revert applied first, then the change it took back, arriving late.
    const known = await revertStory();
    await deliverAll([known.revert, known.events.change]);
    // Recorded: the change is the earliest event seen of the period, so TEAM until the period end, PRO
    // pending (the created, still to come, puts PRO back).
    expect(await row(known.subId)).toMatchObject({ tier: 'TEAM', pendingTier: 'PRO' });

    // A row written before the columns: the revert stored, nothing recorded of how its tier was set.
    const legacy = await revertStory();
    await deliverAll([legacy.revert]);
    await api.prisma.subscription.update({
      where: { providerSubscriptionId: legacy.subId },
      data: { periodTierAt: null, periodTierStatus: null, periodTierEventId: null },
    });
    expect((await deliver(api, legacy.events.change)).outcome).toBe('skipped');
    expect(await row(legacy.subId)).toMatchObject({ tier: 'PRO', pendingTier: null, pendingTierAt: null });
    expect(await userTier(legacy.user)).toBe('PRO');
  });

  it('the drift check and the backfill follow the same rule: the lost renewal event puts the paid tier back', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const P1 = { start: new Date(Date.now() - 35 * DAY), end: new Date(Date.now() - 5 * DAY) };
    const P2 = { start: P1.end, end: new Date(P1.end.getTime() + 30 * DAY) };
    const sub = (type: string, tier: Tier, occurredAt: Date, period: typeof P1, token?: string) =>
      subscriptionEvent({
        type,
        subId,
        priceId: PRICES.month[tier],
        unitAmount: AMOUNT[tier],
        billingCycle: MONTHLY,
        occurredAt,
        periodStart: period.start,
        periodEnd: period.end,
        token,
      });
    const log = (event: Event) => {
      const { notification_id: _n, ...logged } = event;
      billing.events.push(logged);
    };
    const created = sub(
      'subscription.created',
      'TEAM',
      P1.start,
      P1,
      checkoutToken(api, user, 'TEAM', P1.start),
    );
    log(created);
    expect((await deliver(api, created)).outcome).toBe('processed');
    // At the provider: renewed on TEAM (paid), then changed to PRO two days in. Neither subscription
    // webhook reached us; the renewal's payment did.
    const renewed = sub('subscription.updated', 'TEAM', P2.start, P2);
    const renewal = transactionEvent({
      subId,
      priceId: PRICES.month.TEAM,
      total: AMOUNT.TEAM,
      occurredAt: new Date(P2.start.getTime() + 1000),
    });
    const changedAt = new Date(P2.start.getTime() + 2 * DAY);
    const changed = sub('subscription.updated', 'PRO', changedAt, P2);
    log(renewed);
    log(renewal);
    log(changed);
    expect((await deliver(api, renewal)).outcome).toBe('processed');

    // The drift check reads the provider's subscription (PRO, period P2): the earliest event of P2 it knows.
    billing.seedEntity({ ...changed.data, updated_at: changedAt.toISOString() });
    await worker.get(BillingDriftService).check();
    expect(await row(subId)).toMatchObject({ tier: 'PRO', currentPeriodEnd: P2.end });

    // The backfill brings the lost events: the renewal's subscription.updated opened P2 on TEAM.
    await worker.get(BillingBackfillService).run(new Date(), { force: true });
    await waitFor(
      async () =>
        (await api.prisma.webhookEvent.count({
          where: { eventId: { in: [renewed.event_id, changed.event_id] }, status: { not: 'RECEIVED' } },
        })) === 2,
      10_000,
    );
    expect(await row(subId)).toMatchObject({
      tier: 'TEAM',
      pendingTier: 'PRO',
      pendingTierAt: P2.end,
      periodTierEventId: renewed.event_id,
    });
    expect(await userTier(user)).toBe('TEAM');
  });
});
