import { createUser } from '../factories/user.factory.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { User } from '../../src/generated/prisma/client.js';
import {
  adjustmentEvent,
  checkoutToken,
  deliver,
  newSubId,
  PRICE,
  subscribe,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent } from '../support/credits.js';
import { HeldEvents } from '../support/held-events.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

// A refund and the event that writes the grant it takes back, applied by two apply batches open at the same
// time (the worker runs two at once). The first event's transaction is held open at its end (its audit
// entry's insert sleeps: HeldEvents) while the second one's batch runs: neither may miss the other (decision
// "claw-back serialization"; its one exception to the lock order: clawback-lock-order.e2e-spec.ts). Rollover
// `full` everywhere, so no expiry row blurs the sums.

const PACK_S = 'pri_pack_s';
/** How long the first event's transaction stays open after its handler ran. */
const HELD_SECONDS = 1.5;
/** When the second event is delivered: its batch runs while the first one's is still open. */
const SECOND_AFTER_MS = 300;
/** [the refund is the first event, the refund names the subscription]. */
const BOTH_WAYS = [
  [true, true],
  [false, true],
  [true, false],
  [false, false],
] as const;

describe('claw-back against its grant in two concurrent apply batches', () => {
  let env: TestEnv;
  let api: ApiApp;
  let held: HeldEvents;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    await env.startWorker();
    held = await HeldEvents.install(api.prisma);
  });
  afterEach(async () => {
    await expectLedgerConsistent(api.prisma, { allowNegative: true });
  });
  afterAll(() => env.close());

  /** Delivers `first` (its transaction held open), then `second` while it is; both must be processed. */
  async function race(first: { event_id: string }, second: object): Promise<void> {
    await held.holdFor(first.event_id, HELD_SECONDS);
    const firstDone = deliver(api, first);
    await new Promise((resolve) => setTimeout(resolve, SECOND_AFTER_MS));
    const [a, b] = await Promise.all([firstDone, deliver(api, second)]);
    expect([a.outcome, b.outcome]).toEqual(['processed', 'processed']);
  }

  const ledger = async (userId: string) =>
    (await api.prisma.creditTransaction.findMany({ where: { userId } }))
      .map((r) => `${r.kind}:${r.jobId}=${r.delta}`)
      .sort();
  const balance = async (userId: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })).creditBalance;
  const refundOf = (txnId: string, total: string, subId: string | null = null) =>
    adjustmentEvent({ adjId: `adj_${randomUUID().slice(0, 12)}`, txnId, subId, status: 'approved', total });

  async function packPurchase(): Promise<{ buyer: User; pack: ReturnType<typeof transactionEvent> }> {
    const buyer = await createUser(api.prisma);
    const checkout = await api.http
      .post('/api/v1/billing/credit-packs/checkout')
      .set('Authorization', await api.bearer(buyer.identityUserId))
      .send({ price_id: PACK_S });
    const pack = transactionEvent({
      subId: null,
      origin: 'web',
      priceId: PACK_S,
      total: '1000',
      token: checkout.body.custom_data.checkout_token,
      customerId: null,
    });
    return { buyer, pack };
  }

  it('a pack: the refund still open while its transaction.completed is applied, and the reverse', async () => {
    for (const refundFirst of [true, false]) {
      const { buyer, pack } = await packPurchase();
      const refund = refundOf(pack.data.id, '1000');
      if (refundFirst) await race(refund, pack);
      else await race(pack, refund);
      expect({ refundFirst, ledger: await ledger(buyer.id) }).toEqual({
        refundFirst,
        ledger: [`clawback:${refund.data.id}=-500`, `purchase:${pack.data.id}=500`],
      });
      expect(await balance(buyer.id)).toBe(0);
    }
  });

  // A refund that names its subscription is recorded with the subscription's user, and its foreign key
  // happens to wait for the renewal's lock on that user row; one that does not (nothing else names the
  // user yet) waits only for the claw-back's own lock.
  it('a renewal: the refund still open while the renewal is applied, and the reverse', async () => {
    for (const [refundFirst, refundNamesSubscription] of BOTH_WAYS) {
      const { user, subId } = await subscribe(api, 'PRO');
      const renewal = transactionEvent({ subId, origin: 'subscription_recurring', priceId: PRICE.PRO });
      const refund = refundOf(renewal.data.id, '1500', refundNamesSubscription ? subId : null);
      if (refundFirst) await race(refund, renewal);
      else await race(renewal, refund);
      const label = { refundFirst, refundNamesSubscription };
      expect({ ...label, ledger: await ledger(user.id) }).toEqual({
        ...label,
        ledger: [
          `clawback:${refund.data.id}=-1000`,
          `grant:${renewal.data.id}=1000`,
          `grant:first-period:${subId}=1000`,
        ].sort(),
      });
      expect(await balance(user.id)).toBe(1000);
    }
  });

  it('a first payment: its refund against subscription.created, both ways, with and without the subscription id', async () => {
    for (const [refundFirst, refundNamesSubscription] of BOTH_WAYS) {
      const user = await createUser(api.prisma);
      const subId = newSubId();
      const first = transactionEvent({ subId, origin: 'web', priceId: PRICE.PRO, total: '1500' });
      expect((await deliver(api, first)).outcome).toBe('processed');
      const refund = refundOf(first.data.id, '1500', refundNamesSubscription ? subId : null);
      const created = subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE.PRO,
        token: checkoutToken(api, user, 'PRO'),
      });
      if (refundFirst) await race(refund, created);
      else await race(created, refund);
      const label = { refundFirst, refundNamesSubscription };
      expect({ ...label, ledger: await ledger(user.id) }).toEqual({
        ...label,
        ledger: [`clawback:${refund.data.id}=-1000`, `grant:first-period:${subId}=1000`],
      });
      expect(await balance(user.id)).toBe(0);
    }
  });
});
