import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  adjustmentEvent,
  checkoutToken,
  DAY,
  deliver,
  grants,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/** Every ordering of a list (n! of them). */
function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

/**
 * One purchase (subscription.created with the checkout token, its first transaction) and one renewal (the
 * next period's subscription.updated, the renewal transaction without a token), not sent.
 */
async function story(api: ApiApp, tier: 'PRO' | 'TEAM' = 'PRO') {
  const user = await createUser(api.prisma);
  const subId = newSubId();
  const t0 = new Date(Date.now() - 31 * DAY);
  const renewedAt = new Date(t0.getTime() + 30 * DAY);
  const token = checkoutToken(api, user, tier, t0);
  const priceId = PRICE[tier];
  const events = {
    created: subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId,
      token,
      occurredAt: t0,
      periodStart: t0,
      periodEnd: renewedAt,
    }),
    firstPayment: transactionEvent({
      subId,
      priceId,
      origin: 'web',
      token,
      occurredAt: new Date(t0.getTime() + 1000),
    }),
    renewed: subscriptionEvent({
      type: 'subscription.updated',
      subId,
      priceId,
      token,
      occurredAt: renewedAt,
      periodStart: renewedAt,
      periodEnd: new Date(renewedAt.getTime() + 30 * DAY),
    }),
    renewal: transactionEvent({ subId, priceId, origin: 'subscription_recurring', occurredAt: renewedAt }),
  };
  return { user, subId, events };
}

type Story = Awaited<ReturnType<typeof story>>;

const ORDERS = permutations<keyof Story['events']>(['created', 'firstPayment', 'renewed', 'renewal']);

/**
 * Issue 13 item 4: nothing paid is lost to ordering. One purchase (subscription.created with the checkout
 * token, its first transaction) and one renewal (the next period's subscription.updated, the renewal
 * transaction without a token) in every delivery order, and all at once: exactly one grant per period, every
 * payment owned by the buyer, every archive row processed.
 */
describe('billing: one purchase and one renewal converge under every delivery order', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    // Accepted webhooks are applied by the worker.
    await env.startWorker();
  });
  afterAll(() => env.close());

  async function expectConverged(s: Story, label: string) {
    const ledger = (await grants(api, s.user.id)).map((g) => `${g.jobId}=${g.delta}`).sort();
    expect({ label, ledger }).toEqual({
      label,
      ledger: [`first-period:${s.subId}=1000`, `${s.events.renewal.data.id}=1000`].sort(),
    });
    const user = await api.prisma.user.findUniqueOrThrow({ where: { id: s.user.id } });
    expect({ label, tier: user.currentTier, balance: user.creditBalance }).toEqual({
      label,
      tier: 'PRO',
      balance: 2000,
    });
    const payments = await api.prisma.payment.findMany({ where: { providerSubscriptionId: s.subId } });
    expect({ label, owners: payments.map((p) => p.userId) }).toEqual({
      label,
      owners: [s.user.id, s.user.id],
    });
    const archive = await api.prisma.webhookEvent.findMany({
      where: { eventId: { in: Object.values(s.events).map((e) => e.event_id) } },
    });
    expect({ label, statuses: archive.map((a) => a.status) }).toEqual({
      label,
      statuses: ['PROCESSED', 'PROCESSED', 'PROCESSED', 'PROCESSED'],
    });
    const row = await api.prisma.subscription.findUniqueOrThrow({
      where: { providerSubscriptionId: s.subId },
    });
    expect({ label, end: row.currentPeriodEnd }).toEqual({
      label,
      end: new Date(s.events.renewed.data.current_billing_period!.ends_at),
    });
  }

  it('every sequential order of the four events (24 orders)', async () => {
    for (const order of ORDERS) {
      const s = await story(api);
      for (const name of order) {
        const res = await deliver(api, s.events[name]);
        expect({ name, status: res.status }).toEqual({ name, status: 200 });
      }
      await expectConverged(s, order.join(' > '));
    }
  }, 120_000);

  it('all four events at once, 20 rounds, then all redelivered under new event ids', async () => {
    for (let round = 0; round < 20; round += 1) {
      const s = await story(api);
      const answers = await Promise.all(Object.values(s.events).map((e) => deliver(api, e)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      await expectConverged(s, `round ${round}`);
      await Promise.all(
        Object.values(s.events).map((e) => deliver(api, { ...e, event_id: `${e.event_id}_b` })),
      );
      expect(await grants(api, s.user.id)).toHaveLength(2);
    }
  }, 120_000);
});

/**
 * The same four events under rollover rules that expire credits (PRO `none`, TEAM `cap:2000`), then a full
 * refund of the renewal. Whatever the order, the renewal closes the first period: its unspent credits expire
 * (keyed on the first period's grant) and the renewal's own credits stay, so the refund takes all of them
 * back. A created delivered after the next period opened used to date the first period by the stored row
 * (already the next period), close the renewal's allowance and expire the newer period's credits instead;
 * the refund then took back nothing.
 */
describe('billing: the credits of one purchase and one renewal converge under rollover rules', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { CREDIT_ROLLOVER: 'PRO:none,TEAM:cap:2000' } });
    api = await env.startApi();
    await env.startWorker();
  });
  afterAll(() => env.close());

  const cases = [
    // PRO grants 1000 a month; none: all 1000 unspent credits of the first period expire.
    { tier: 'PRO', expired: 1000, balance: 1000, afterRefund: 0 },
    // TEAM grants 5000 a month; cap:2000: 3000 of the first period expire.
    { tier: 'TEAM', expired: 3000, balance: 7000, afterRefund: 2000 },
  ] as const;

  async function ledgerOf(s: Story) {
    const rows = await api.prisma.creditTransaction.findMany({ where: { userId: s.user.id } });
    return rows
      .map((r) => {
        const closedBy = (r.details as { closed_by?: string } | null)?.closed_by;
        return `${r.kind} ${r.jobId} ${r.delta}${closedBy ? ` closed by ${closedBy}` : ''}`;
      })
      .sort();
  }

  it.each(cases)(
    '$tier: every sequential order gives one ledger and balance, and the refund takes the renewal back',
    async ({ tier, expired, balance, afterRefund }) => {
      const monthly = tier === 'PRO' ? 1000 : 5000;
      for (const order of ORDERS) {
        const label = order.join(' > ');
        const s = await story(api, tier);
        for (const name of order) {
          // A renewal paid before anything tied the subscription to its user is parked (skipped) until then.
          const res = await deliver(api, s.events[name]);
          expect({ label, name, status: res.status }).toEqual({ label, name, status: 200 });
        }
        const renewalId = s.events.renewal.data.id;
        const firstPeriod = `first-period:${s.subId}`;
        const expected = [
          `grant ${firstPeriod} ${monthly}`,
          `grant ${renewalId} ${monthly}`,
          `expiry ${firstPeriod} ${-expired} closed by ${renewalId}`,
        ].sort();
        expect({ label, ledger: await ledgerOf(s) }).toEqual({ label, ledger: expected });
        const user = await api.prisma.user.findUniqueOrThrow({ where: { id: s.user.id } });
        expect({ label, balance: user.creditBalance, plan: user.planGrantJobId }).toEqual({
          label,
          balance,
          plan: renewalId,
        });

        const refund = adjustmentEvent({
          adjId: `adj_${s.subId}`,
          txnId: renewalId,
          subId: s.subId,
          status: 'approved',
        });
        expect({ label, outcome: (await deliver(api, refund)).outcome }).toEqual({
          label,
          outcome: 'processed',
        });
        const after = await api.prisma.user.findUniqueOrThrow({ where: { id: s.user.id } });
        expect({ label, balance: after.creditBalance }).toEqual({ label, balance: afterRefund });
      }
    },
    180_000,
  );
});
