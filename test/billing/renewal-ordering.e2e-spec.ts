import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  checkoutToken,
  DAY,
  deliver,
  grants,
  newSubId,
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

  async function story() {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const t0 = new Date(Date.now() - 31 * DAY);
    const renewedAt = new Date(t0.getTime() + 30 * DAY);
    const token = checkoutToken(api, user, 'PRO', t0);
    const events = {
      created: subscriptionEvent({
        type: 'subscription.created',
        subId,
        token,
        occurredAt: t0,
        periodStart: t0,
        periodEnd: renewedAt,
      }),
      firstPayment: transactionEvent({
        subId,
        origin: 'web',
        token,
        occurredAt: new Date(t0.getTime() + 1000),
      }),
      renewed: subscriptionEvent({
        type: 'subscription.updated',
        subId,
        token,
        occurredAt: renewedAt,
        periodStart: renewedAt,
        periodEnd: new Date(renewedAt.getTime() + 30 * DAY),
      }),
      renewal: transactionEvent({ subId, origin: 'subscription_recurring', occurredAt: renewedAt }),
    };
    return { user, subId, events };
  }

  async function expectConverged(s: Awaited<ReturnType<typeof story>>, label: string) {
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
    const names = ['created', 'firstPayment', 'renewed', 'renewal'] as const;
    for (const order of permutations([...names])) {
      const s = await story();
      for (const name of order) {
        const res = await deliver(api, s.events[name]);
        expect({ name, status: res.status }).toEqual({ name, status: 200 });
      }
      await expectConverged(s, order.join(' > '));
    }
  }, 120_000);

  it('all four events at once, 20 rounds, then all redelivered under new event ids', async () => {
    for (let round = 0; round < 20; round += 1) {
      const s = await story();
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
