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
  subscribe,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('billing webhooks: payments and adjustments', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    // Accepted webhooks are applied by the worker.
    await env.startWorker();
  });
  afterAll(() => env.close());

  const subscribed = (tier: 'PRO' | 'TEAM' = 'PRO') => subscribe(api, tier);

  it('records the first payment for revenue without granting credits (created already did)', async () => {
    const { user, subId } = await subscribed('PRO');
    const txn = transactionEvent({ subId, origin: 'web', total: '1500' });
    expect((await deliver(api, txn)).outcome).toBe('processed');
    expect(
      await api.prisma.payment.findUniqueOrThrow({ where: { providerTransactionId: txn.data.id } }),
    ).toMatchObject({
      userId: user.id,
      providerSubscriptionId: subId,
      status: 'completed',
      origin: 'web',
      tier: 'PRO',
      amountTotal: 1500,
      currency: 'USD',
      occurredAt: new Date(txn.occurred_at),
    });
    expect(await grants(api, user.id)).toHaveLength(1);
    const [audit] = await api.prisma.auditLog.findMany({
      where: { action: 'transaction.completed', userId: user.identityUserId },
    });
    expect(audit.details).toMatchObject({
      transaction_id: txn.data.id,
      amount: 1500,
      currency: 'USD',
      origin: 'web',
      credits: 0,
    });
  });

  it('a renewal grants the tier’s monthly credits once, keyed on the transaction id', async () => {
    const { user, subId } = await subscribed('TEAM');
    const renewal = transactionEvent({
      subId,
      origin: 'subscription_recurring',
      priceId: PRICE.TEAM,
      total: '4900',
    });
    await deliver(api, renewal);
    // The provider re-sends the same transaction under a new event id: still one grant.
    await deliver(api, { ...renewal, event_id: `${renewal.event_id}_again` });
    const ledger = await grants(api, user.id);
    expect(ledger.map((g) => [g.jobId, g.delta])).toEqual([
      [expect.stringMatching(/^first-period:sub_/), 5000],
      [renewal.data.id, 5000],
    ]);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).creditBalance).toBe(10000);
    expect(await api.prisma.payment.count({ where: { providerTransactionId: renewal.data.id } })).toBe(1);
  });

  it('a trial grants the trial period’s credits at creation and the first paid period’s at the first charge, once each', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const trialStart = new Date(Date.now() - 14 * 86_400_000);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      status: 'trialing',
      token: checkoutToken(api, user),
      occurredAt: trialStart,
    });
    await deliver(api, created);
    // The $0 checkout transaction of a trial (origin web) grants nothing.
    const checkout = transactionEvent({ subId, origin: 'web', total: '0', occurredAt: trialStart });
    expect((await deliver(api, checkout)).outcome).toBe('processed');
    expect((await grants(api, user.id)).map((g) => [g.jobId, g.delta])).toEqual([
      [`first-period:${subId}`, 1000],
    ]);

    // Trial ends: activated (no grant) and the first paid charge, a subscription_recurring transaction.
    await deliver(api, subscriptionEvent({ type: 'subscription.activated', subId, status: 'active' }));
    const firstCharge = transactionEvent({ subId, origin: 'subscription_recurring', total: '1500' });
    expect((await deliver(api, firstCharge)).outcome).toBe('processed');
    expect(await deliver(api, { ...firstCharge, notification_id: 'ntf_replay' })).toMatchObject({
      body: { status: 'duplicate' },
    });
    expect((await grants(api, user.id)).map((g) => [g.jobId, g.delta])).toEqual([
      [`first-period:${subId}`, 1000],
      [firstCharge.data.id, 1000],
    ]);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).creditBalance).toBe(2000);
  });

  it('a proration charge is recorded but grants nothing', async () => {
    const { user, subId } = await subscribed('PRO');
    await deliver(
      api,
      transactionEvent({ subId, origin: 'subscription_update', priceId: PRICE.TEAM, total: '2100' }),
    );
    expect(await grants(api, user.id)).toHaveLength(1);
    expect(
      await api.prisma.payment.count({
        where: { providerSubscriptionId: subId, origin: 'subscription_update' },
      }),
    ).toBe(1);
  });

  const adjustmentRow = (adjId: string) =>
    api.prisma.billingAdjustment.findUniqueOrThrow({ where: { providerAdjustmentId: adjId } });

  it('a payment that arrives before its subscription is recorded and linked to the user later, with its refunds', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const txn = transactionEvent({ subId, origin: 'web', customerId: `ctm_${subId}` });
    // Its refund comes first of all: nothing names its owner yet.
    const adjId = `adj_early_${subId}`;
    await deliver(api, adjustmentEvent({ adjId, txnId: txn.data.id, subId }));
    await deliver(api, txn);
    expect(
      (await api.prisma.payment.findUniqueOrThrow({ where: { providerTransactionId: txn.data.id } })).userId,
    ).toBeNull();
    const before = await adjustmentRow(adjId);
    expect(before.userId).toBeNull();
    await deliver(
      api,
      subscriptionEvent({ type: 'subscription.created', subId, token: checkoutToken(api, user) }),
    );
    expect(
      (await api.prisma.payment.findUniqueOrThrow({ where: { providerTransactionId: txn.data.id } })).userId,
    ).toBe(user.id);
    // The refund is the user's too (the account export lists it); the provider's updated_at is kept.
    expect(await adjustmentRow(adjId)).toMatchObject({ userId: user.id, updatedAt: before.updatedAt });
  });

  it('a refund recorded before its payment gets the payment’s owner when the payment is recorded', async () => {
    const { user, subId } = await subscribed('PRO');
    const txn = transactionEvent({ subId, origin: 'subscription_update', total: '300' });
    const adjId = `adj_before_${subId}`;
    // The refund names neither the subscription nor the customer (Paddle's fields are nullable).
    await deliver(api, adjustmentEvent({ adjId, txnId: txn.data.id, subId: null, status: 'approved' }));
    expect((await adjustmentRow(adjId)).userId).toBeNull();
    await deliver(api, txn);
    expect((await adjustmentRow(adjId)).userId).toBe(user.id);
  });

  it('a renewal that arrives before any event of its subscription is parked, then granted once by the created', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const renewal = transactionEvent({ subId, customerId: null });
    expect((await deliver(api, renewal)).outcome).toBe('skipped');
    expect(
      await api.prisma.payment.findUniqueOrThrow({ where: { providerTransactionId: renewal.data.id } }),
    ).toMatchObject({ userId: null, amountTotal: 1500 });
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: renewal.event_id } })).toMatchObject({
      status: 'SKIPPED',
      error: 'unknown_subscription',
    });
    expect(await grants(api, user.id)).toEqual([]);

    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token: checkoutToken(api, user),
      occurredAt: new Date(Date.now() - 40 * DAY),
    });
    expect((await deliver(api, created)).outcome).toBe('processed');
    expect((await grants(api, user.id)).map((g) => [g.jobId, g.delta]).sort()).toEqual(
      [
        [`first-period:${subId}`, 1000],
        [renewal.data.id, 1000],
      ].sort(),
    );
    expect(
      await api.prisma.payment.findUniqueOrThrow({ where: { providerTransactionId: renewal.data.id } }),
    ).toMatchObject({ userId: user.id });
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: renewal.event_id } })).toMatchObject({
      status: 'PROCESSED',
      error: null,
    });
    // The same renewal again under a new event id, and the created again: nothing more.
    await deliver(api, { ...renewal, event_id: `${renewal.event_id}_again` });
    await deliver(api, { ...created, event_id: `${created.event_id}_again` });
    expect(await grants(api, user.id)).toHaveLength(2);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).creditBalance).toBe(2000);
  });

  it('adjustments record refunds and credits, audited, and an older update never overwrites a newer one', async () => {
    const { user, subId } = await subscribed('PRO');
    const txn = transactionEvent({ subId, origin: 'web' });
    await deliver(api, txn);
    const t = Date.now() - 60_000;
    const adjId = `adj_${subId}`;
    await deliver(
      api,
      adjustmentEvent({
        adjId,
        txnId: txn.data.id,
        subId,
        status: 'pending_approval',
        occurredAt: new Date(t),
      }),
    );
    const approved = adjustmentEvent({
      type: 'adjustment.updated',
      adjId,
      txnId: txn.data.id,
      subId,
      status: 'approved',
      occurredAt: new Date(t),
      updatedAt: new Date(t + 20_000),
    });
    expect((await deliver(api, approved)).outcome).toBe('processed');
    const stale = adjustmentEvent({
      type: 'adjustment.updated',
      adjId,
      txnId: txn.data.id,
      subId,
      status: 'pending_approval',
      occurredAt: new Date(t),
      updatedAt: new Date(t + 10_000),
    });
    expect((await deliver(api, stale)).outcome).toBe('skipped');

    const row = await api.prisma.billingAdjustment.findUniqueOrThrow({
      where: { providerAdjustmentId: adjId },
    });
    expect(row).toMatchObject({
      userId: user.id,
      action: 'refund',
      status: 'approved',
      amountTotal: 1500,
      currency: 'USD',
      providerTransactionId: txn.data.id,
    });
    const entries = await api.prisma.auditLog.findMany({
      where: { resourceId: row.id },
      orderBy: { createdAt: 'asc' },
    });
    // The approved refund of the first payment takes back the first period's credits (issue 18).
    expect(entries.map((e) => e.action)).toEqual([
      'adjustment.created',
      'adjustment.updated',
      'credits.clawed_back',
      'adjustment.updated',
    ]);
    expect(entries[2].details).toMatchObject({ adjustment_id: adjId, credits: 1000 });
    expect(entries[1].details).toMatchObject({
      adjustment_id: adjId,
      action: 'refund',
      status: 'approved',
      amount: 1500,
    });

    const credit = adjustmentEvent({
      adjId: `adj_credit_${subId}`,
      txnId: txn.data.id,
      subId,
      action: 'credit',
      status: 'approved',
      total: '500',
    });
    await deliver(api, credit);
    expect(
      await api.prisma.billingAdjustment.findUniqueOrThrow({
        where: { providerAdjustmentId: `adj_credit_${subId}` },
      }),
    ).toMatchObject({ action: 'credit', amountTotal: 500 });
  });

  it('keeps payments and adjustments when the user is erased', async () => {
    const { user, subId } = await subscribed('PRO');
    const txn = transactionEvent({ subId, origin: 'web' });
    await deliver(api, txn);
    await deliver(api, adjustmentEvent({ adjId: `adj_erase_${subId}`, txnId: txn.data.id, subId }));
    await api.prisma.user.delete({ where: { id: user.id } });
    expect(
      (await api.prisma.payment.findUniqueOrThrow({ where: { providerTransactionId: txn.data.id } })).userId,
    ).toBeNull();
    expect(
      (
        await api.prisma.billingAdjustment.findUniqueOrThrow({
          where: { providerAdjustmentId: `adj_erase_${subId}` },
        })
      ).userId,
    ).toBeNull();
    expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(0);
  });

  it('refuses a transaction whose amount is not in minor units (400, archived FAILED)', async () => {
    const { subId } = await subscribed('PRO');
    const txn = transactionEvent({ subId, total: '15.00' });
    expect((await deliver(api, txn)).status).toBe(400);
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: txn.event_id } })).toMatchObject({
      status: 'FAILED',
    });
  });
});
