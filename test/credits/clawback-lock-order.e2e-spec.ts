import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { createUser } from '../factories/user.factory.js';
import {
  adjustmentEvent,
  checkoutCreated,
  checkoutToken,
  newEventId,
  newSubId,
  PRICE,
  send,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent } from '../support/credits.js';
import { HeldEvents, lockWaiters, waitForLockWaiters } from '../support/held-events.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/**
 * The one exception to the claw-back lock order (decision "claw-back serialization"): a refund that finds its
 * payment, and so the payment's subscription, only once it holds the transaction's claw-back lock takes the
 * subscription's lock after it. Each interleaving is forced: the events are accepted at intake (no worker
 * runs) and applied by WebhookInboxService.apply, as the worker's jobs would, in two processes' inboxes (two
 * apply batches each, like two workers); a batch is held open at its end by a gate on its audit insert, and
 * the test waits until each transaction is blocked on the lock it must wait for before the next step.
 */
describe('claw-back: a refund that learns its subscription under the transaction lock', () => {
  let env: TestEnv;
  let api: ApiApp;
  let first: WebhookInboxService;
  let second: WebhookInboxService;
  let held: HeldEvents;

  beforeAll(async () => {
    // Debug: the batch rolled back by a deadlock is logged there.
    env = await TestEnv.create({ logLevel: 'debug' });
    api = await env.startApi();
    first = api.app.get(WebhookInboxService);
    second = (await env.startApi()).app.get(WebhookInboxService);
    held = await HeldEvents.install(api.prisma);
  });
  afterEach(async () => {
    await expectLedgerConsistent(api.prisma);
  });
  afterAll(() => env.close());

  /** Accepted at intake (RECEIVED, nobody applies it yet); its archive row id. */
  async function accepted(event: { event_id: string }): Promise<string> {
    const res = await send(api, event);
    expect(res.body).toEqual({ received: true, status: 'accepted' });
    const row = await api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'billing', eventId: event.event_id } },
      select: { id: true },
    });
    return row.id;
  }
  const statuses = async (events: { event_id: string }[]) =>
    (
      await api.prisma.webhookEvent.findMany({
        where: { provider: 'billing', eventId: { in: events.map((e) => e.event_id) } },
        select: { status: true },
      })
    ).map((row) => row.status);
  const ledger = async (userId: string) =>
    (await api.prisma.creditTransaction.findMany({ where: { userId } }))
      .map((r) => `${r.kind}:${r.jobId}=${r.delta}`)
      .sort();
  const balance = async (userId: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })).creditBalance;
  const refundOf = (txnId: string) =>
    adjustmentEvent({
      adjId: `adj_${randomUUID().slice(0, 12)}`,
      txnId,
      subId: null,
      status: 'approved',
      total: '1500',
    });
  const subscriptionLock = (subId: string) => `billing-subscription:${subId}`;
  const transactionLock = (txnId: string) => `billing-transaction:${txnId}`;

  it('waits for the first-period grant that subscription.created holds under the subscription lock, and takes it back', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const payment = transactionEvent({ subId, origin: 'web', priceId: PRICE.PRO, total: '1500' });
    // No subscription id: the refund learns it from the payment.
    const refund = refundOf(payment.data.id);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: PRICE.PRO,
      token: checkoutToken(api, user, 'PRO'),
    });
    const ids = [await accepted(payment), await accepted(refund), await accepted(created)];
    const gates = [await held.gate(payment.event_id), await held.gate(refund.event_id)];
    const createdGate = await held.gate(created.event_id);

    // The first payment's transaction.completed holds the subscription's and the transaction's locks, its
    // payment row not committed.
    const applied = [first.apply(ids[0], false)];
    await gates[0].reached();
    // The refund finds no payment, so no subscription to lock first: it waits for the transaction's lock.
    applied.push(first.apply(ids[1], false));
    await waitForLockWaiters(api.prisma, transactionLock(payment.data.id));
    // subscription.created, in another process's batch, waits for the subscription's lock.
    applied.push(second.apply(ids[2], false));
    await waitForLockWaiters(api.prisma, subscriptionLock(subId));

    // The payment commits: subscription.created takes the subscription's lock and grants the first period
    // (not committed while its gate is closed); the refund takes the transaction's lock and now finds the
    // payment and its subscription. It must wait for the subscription's lock; had it read the grants instead,
    // it would be waiting at its own gate with nothing taken back, and subscription.created would not see
    // its uncommitted refund either.
    await gates[0].open();
    await createdGate.reached();
    await waitFor(
      async () =>
        (await lockWaiters(api.prisma, subscriptionLock(subId))) +
          (await lockWaiters(api.prisma, `test-gate:${refund.event_id}`)) ===
        1,
    );
    await createdGate.open();
    await gates[1].open();

    expect((await Promise.all(applied)).map((r) => r.outcome)).toEqual([
      'processed',
      'processed',
      'processed',
    ]);
    expect(await statuses([payment, refund, created])).toEqual(['PROCESSED', 'PROCESSED', 'PROCESSED']);
    // The grant and its claw-back, each once.
    expect(await ledger(user.id)).toEqual(
      [`clawback:${refund.data.id}=-1000`, `grant:first-period:${subId}=1000`].sort(),
    );
    expect(await balance(user.id)).toBe(0);
  });

  it('a deadlock with the redelivered payment: PostgreSQL fails one batch, whose events are applied again one by one', async () => {
    const { user, subId, created } = await checkoutCreated(api);
    expect((await first.apply(await accepted(created), false)).outcome).toBe('processed');
    const renewal = transactionEvent({ subId, origin: 'subscription_recurring', priceId: PRICE.PRO });
    // The same transaction.completed under a new event id (the provider's redelivery of a new notification).
    const redelivered = { ...renewal, event_id: newEventId(), notification_id: `ntf_${randomUUID()}` };
    const refund = refundOf(renewal.data.id);
    // Each of the two batches that meet has another event, so whichever PostgreSQL fails holds more than one.
    const others = [await checkoutCreated(api), await checkoutCreated(api)];
    const ids = {
      renewal: await accepted(renewal),
      refund: await accepted(refund),
      redelivered: await accepted(redelivered),
      others: [await accepted(others[0].created), await accepted(others[1].created)],
    };
    const gate = await held.gate(renewal.event_id);

    // The renewal holds the subscription's and the transaction's locks, its payment not committed.
    const applied = [first.apply(ids.renewal, false)];
    await gate.reached();
    // The refund's batch: no payment found, it waits for the transaction's lock.
    applied.push(first.apply(ids.refund, false), first.apply(ids.others[0], false));
    await waitForLockWaiters(api.prisma, transactionLock(renewal.data.id));
    // The redelivered payment's batch in the other process: it waits for the subscription's lock.
    applied.push(second.apply(ids.redelivered, false), second.apply(ids.others[1], false));
    await waitForLockWaiters(api.prisma, subscriptionLock(subId));
    // The renewal commits. The refund holds the transaction's lock and now wants the subscription's (found
    // through the payment); the redelivered payment holds the subscription's and wants the transaction's.
    await gate.open();

    expect((await Promise.all(applied)).map((r) => r.outcome)).toEqual([
      'processed',
      'processed',
      'processed',
      'processed',
      'processed',
    ]);
    const rolledBack = env.logs.lines
      .map((line) => JSON.parse(line) as { msg?: string; err?: string; events?: number })
      .filter((line) => line.msg === 'webhook batch rolled back; applying its events one by one');
    expect(rolledBack).toEqual([
      expect.objectContaining({ events: 2, err: expect.stringMatching(/deadlock/) }),
    ]);
    expect(await statuses([renewal, refund, redelivered, ...others.map((o) => o.created)])).toEqual(
      Array.from({ length: 5 }, () => 'PROCESSED'),
    );
    // The renewal's grant once (the redelivery grants nothing more) and its claw-back once.
    expect(await ledger(user.id)).toEqual(
      [
        `clawback:${refund.data.id}=-1000`,
        `grant:${renewal.data.id}=1000`,
        `grant:first-period:${subId}=1000`,
      ].sort(),
    );
    expect(await balance(user.id)).toBe(1000);
    for (const other of others) expect(await balance(other.user.id)).toBe(1000);
  });
});
