import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { User } from '../../src/generated/prisma/client.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { checkoutToken, deliver } from '../support/billing.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import {
  fixture,
  type Json,
  newSuffix,
  paddleSignature,
  rebase,
  shiftTo,
  withCheckoutToken,
} from './contract-support.js';

/** The price of Paddle's demo "ChatApp Pro" plan that every published subscription fixture uses. */
const PRO_PRICE = 'pri_01gsz8x8sawmvhz1pv30nge1ke';
const NODE_SUB = 'sub_01h7ht5z5wdg9pz18jx1fagp8k';
const PRO_CREDITS = 1000;

type PaddleEvent = { event_id: string; event_type: string; occurred_at: string; data: Json };

/**
 * Paddle's own notification fixtures (paddle-node-sdk and paddle-python-sdk; see fixtures/README.md),
 * signed as Paddle signs them and POSTed to /webhooks/billing. Effects are read from the database.
 */
describe('contract: Paddle Billing notifications from the official SDKs', () => {
  let env: TestEnv;
  let api: ApiApp;
  let mail: FakeEmailApi;

  beforeAll(async () => {
    mail = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: {
        ...mail.env(),
        BILLING_PRICE_TIERS: `${PRO_PRICE}:PRO,pri_01h84cdy3xatsp16afda2gekzy:PRO,pri_pro:PRO,pri_team:TEAM`,
      },
    });
    env.onClose(() => mail.close());
    api = await env.startApi();
    await env.startWorker();
  });
  afterAll(() => env.close());

  /** Signed exactly as Paddle signs (Paddle-Signature ts/h1 over the raw bytes), through the shared helper. */
  async function send(event: PaddleEvent) {
    const raw = JSON.stringify(event);
    const res = await deliver(api, event, {
      rawBody: raw,
      signature: paddleSignature(raw, TEST_SECRETS.BILLING_WEBHOOK_SECRET),
    });
    expect({ type: event.event_type, status: res.status }).toEqual({ type: event.event_type, status: 200 });
    expect(res.body).toMatchObject({ received: true });
    return res;
  }

  const archived = (eventId: string) =>
    api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'billing', eventId } },
    });
  const subRow = (id: string) =>
    api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: id } });
  const userRow = (id: string) => api.prisma.user.findUniqueOrThrow({ where: { id } });
  const audited = (action: string, eventId: string) =>
    api.prisma.auditLog.count({ where: { action, details: { path: ['event_id'], equals: eventId } } });

  /** A node-sdk fixture tied to this story (same suffix and shift for every event of one story). */
  const node = (name: string, suffix: string, shiftMs: number, ids?: Record<string, string>) =>
    rebase(fixture<PaddleEvent>('paddle', `node-sdk.${name}`), { suffix, shiftMs, ids });

  it('follows one subscription through every subscription.* notification Paddle publishes', async () => {
    const user = await createUser(api.prisma);
    const suffix = newSuffix();
    // The node-sdk lifecycle happened on 2023-08-11 between 08:07 and 15:23; replayed ending a minute ago.
    const shiftMs = shiftTo('2023-08-11T15:23:01.697145Z');
    const subId = `${NODE_SUB}${suffix}`;
    const created = withCheckoutToken(
      node('subscription-created', suffix, shiftMs),
      checkoutToken(api, user),
    );

    await send(created);
    expect(await subRow(subId)).toMatchObject({
      status: 'ACTIVE',
      tier: 'PRO',
      userId: user.id,
      currency: 'USD',
    });
    expect(await userRow(user.id)).toMatchObject({ currentTier: 'PRO', creditBalance: PRO_CREDITS });
    // Fields we do not read pass through untouched into the archive.
    expect(await archived(created.event_id)).toMatchObject({
      status: 'PROCESSED',
      eventType: 'subscription.created',
      payload: created,
    });
    expect(await audited('subscription.created', created.event_id)).toBe(1);
    await waitFor(() => Promise.resolve(mail.deliveredTo(user.email).length > 0), 10_000, 50);
    expect(mail.deliveredTo(user.email).map((d) => d.tags.find((t) => t.name === 'template')?.value)).toEqual(
      ['subscription_welcome'],
    );

    const steps: [string, string][] = [
      ['subscription-activated', 'ACTIVE'],
      ['subscription-updated', 'ACTIVE'],
      ['subscription-past-due', 'PAST_DUE'],
      ['subscription-paused', 'PAUSED'],
      ['subscription-resumed', 'ACTIVE'],
    ];
    for (const [name, status] of steps) {
      const event = node(name, suffix, shiftMs);
      await send(event);
      expect({ name, status: (await subRow(subId)).status }).toEqual({ name, status });
      expect({ name, archive: (await archived(event.event_id)).status }).toEqual({
        name,
        archive: 'PROCESSED',
      });
      expect({ name, audits: await audited(event.event_type, event.event_id) }).toEqual({ name, audits: 1 });
      // Paid access is kept while past due or paused; the provider ends it with subscription.canceled.
      expect((await userRow(user.id)).currentTier).toBe('PRO');
    }
    const resumed = node('subscription-resumed', suffix, shiftMs);
    expect((await subRow(subId)).currentPeriodEnd?.toISOString()).toBe(
      (resumed.data.current_billing_period as { ends_at: string }).ends_at,
    );

    // canceled with no current billing period: the subscription is over now.
    const canceled = node('subscription-canceled', suffix, shiftMs);
    await send(canceled);
    const row = await subRow(subId);
    expect(row.status).toBe('CANCELED');
    expect(row.canceledAt?.toISOString()).toBe(canceled.data.canceled_at);
    expect(await audited('subscription.canceled', canceled.event_id)).toBe(1);
    // One grant for the one paid period, whatever followed.
    expect(await api.prisma.creditTransaction.count({ where: { userId: user.id, kind: 'grant' } })).toBe(1);
  });

  it('acknowledges the notifications it does not act on: archived, answered 200, no effect', async () => {
    const suffix = newSuffix();
    const names = ['customer-created', 'customer-updated', 'transaction-paid', 'subscription-trialing'];
    for (const name of names) {
      const event = node(name, suffix, 0);
      await send(event);
      const row = await archived(event.event_id);
      // The archive row holds the event as sent: its payload, and the type, time and source read from it.
      expect({
        name,
        status: row.status,
        payload: row.payload,
        eventType: row.eventType,
        occurredAt: row.occurredAt?.toISOString(),
        source: row.source,
      }).toEqual({
        name,
        status: 'SKIPPED',
        payload: event,
        eventType: event.event_type,
        occurredAt: new Date(event.occurred_at as string).toISOString(),
        source: 'delivery',
      });
    }
    const trialing = node('subscription-trialing', suffix, 0);
    expect(
      await api.prisma.subscription.count({ where: { providerSubscriptionId: trialing.data.id as string } }),
    ).toBe(0);
    expect(await api.prisma.payment.count({ where: { providerTransactionId: { endsWith: suffix } } })).toBe(
      0,
    );
  });

  it('records transaction.completed as a payment of the user whose checkout token it carries', async () => {
    const user = await createUser(api.prisma);
    const suffix = newSuffix();
    const event = withCheckoutToken(
      node('transaction-completed', suffix, shiftTo('2023-08-22T07:15:45.366122Z')),
      checkoutToken(api, user),
    );
    await send(event);
    const totals = (event.data.details as { totals: { total: string; currency_code: string } }).totals;
    expect(
      await api.prisma.payment.findUniqueOrThrow({
        where: { providerTransactionId: event.data.id as string },
      }),
    ).toMatchObject({
      userId: user.id,
      status: 'completed',
      origin: 'web',
      tier: 'PRO',
      amountTotal: Number(totals.total),
      currency: totals.currency_code,
    });
    expect(await audited('transaction.completed', event.event_id)).toBe(1);
    // A first payment ("web") grants nothing by itself: subscription.created does.
    expect(await api.prisma.creditTransaction.count({ where: { userId: user.id } })).toBe(0);
  });

  it('grants a renewal once: subscription.created, then the recurring transaction.completed (python-sdk events API)', async () => {
    const user = await createUser(api.prisma);
    const suffix = newSuffix();
    // Published for two subscriptions of the demo account: the renewal's subscription id is joined to
    // the node-sdk subscription, and the story ends a minute ago.
    const shiftMs = shiftTo('2023-11-23T15:33:19.645134Z');
    const created = withCheckoutToken(
      node('subscription-created', suffix, shiftMs),
      checkoutToken(api, user),
    );
    const renewal = rebase(
      fixture<PaddleEvent>('paddle', 'python-sdk.events.transaction-completed-renewal'),
      {
        suffix,
        shiftMs,
        ids: { sub_01gyswnfgtehe0f6mvggzza8qk: NODE_SUB },
      },
    );
    expect(renewal.data.origin).toBe('subscription_recurring');

    await send(created);
    await send(renewal);
    await send(renewal); // Paddle's redelivery reuses the event id
    const grants = await api.prisma.creditTransaction.findMany({
      where: { userId: user.id, kind: 'grant' },
      orderBy: { createdAt: 'asc' },
    });
    expect(grants.map((g) => g.delta)).toEqual([PRO_CREDITS, PRO_CREDITS]);
    expect(grants[1].jobId).toBe(renewal.data.id);
    expect(await userRow(user.id)).toMatchObject({ creditBalance: 2 * PRO_CREDITS, currentTier: 'PRO' });
    expect(
      await api.prisma.payment.findUniqueOrThrow({
        where: { providerTransactionId: renewal.data.id as string },
      }),
    ).toMatchObject({ userId: user.id, origin: 'subscription_recurring' });
  });

  it('grants a renewal delivered before its subscription.created once, when the created ties it to the buyer', async () => {
    const user = await createUser(api.prisma);
    const suffix = newSuffix();
    const shiftMs = shiftTo('2023-11-23T15:33:19.645134Z');
    const created = withCheckoutToken(
      node('subscription-created', suffix, shiftMs),
      checkoutToken(api, user),
    );
    const renewal = rebase(
      fixture<PaddleEvent>('paddle', 'python-sdk.events.transaction-completed-renewal'),
      { suffix, shiftMs, ids: { sub_01gyswnfgtehe0f6mvggzza8qk: NODE_SUB } },
    );

    await send(renewal);
    expect(await archived(renewal.event_id)).toMatchObject({
      status: 'SKIPPED',
      error: 'unknown_subscription',
    });
    await send(created);
    await send(renewal);
    const grants = await api.prisma.creditTransaction.findMany({ where: { userId: user.id, kind: 'grant' } });
    expect(grants.map((g) => g.delta)).toEqual([PRO_CREDITS, PRO_CREDITS]);
    expect(grants.map((g) => g.jobId)).toContain(renewal.data.id);
    expect(await archived(renewal.event_id)).toMatchObject({ status: 'PROCESSED' });
    expect(
      await api.prisma.payment.findUniqueOrThrow({
        where: { providerTransactionId: renewal.data.id as string },
      }),
    ).toMatchObject({ userId: user.id });
  });

  it('moves a failed renewal to PAST_DUE although its items carry currency_code null, keeping paid access', async () => {
    const user: User = await createUser(api.prisma);
    const suffix = newSuffix();
    // Paddle sandbox's failed renewal (python-sdk events API) of subscription sub_01gyssnczp81czs49zcprm6hfv,
    // whose purchase is the node-sdk subscription.created joined to it.
    const pastDueId = 'sub_01gyssnczp81czs49zcprm6hfv';
    const shiftMs = shiftTo('2023-11-24T14:12:06.640975Z');
    const created = withCheckoutToken(
      node('subscription-created', suffix, shiftMs, { [NODE_SUB]: pastDueId }),
      checkoutToken(api, user),
    );
    const failed = rebase(fixture<PaddleEvent>('paddle', 'python-sdk.events.subscription-updated-past-due'), {
      suffix,
      shiftMs,
    });
    const items = failed.data.items as { price: { unit_price: { currency_code: unknown } } }[];
    expect(items.map((item) => item.price.unit_price.currency_code)).toEqual([null, null]);

    await send(created);
    await send(failed);
    expect(await subRow(`${pastDueId}${suffix}`)).toMatchObject({ status: 'PAST_DUE', tier: 'PRO' });
    expect(await archived(failed.event_id)).toMatchObject({ status: 'PROCESSED', payload: failed });
    expect((await userRow(user.id)).currentTier).toBe('PRO');
    const auth = await api.bearer(user.identityUserId, user.email);
    const me = await api.http.get('/api/v1/me').set('Authorization', auth).expect(200);
    expect(me.body).toMatchObject({ current_tier: 'PRO', subscription: { status: 'PAST_DUE' } });
  });

  it('records adjustment.created and adjustment.updated (node-sdk) with an audit entry each', async () => {
    const suffix = newSuffix();
    const shiftMs = shiftTo('2023-08-21T14:10:08.650443Z');
    const created = node('adjustment-created', suffix, shiftMs);
    const updated = node('adjustment-updated', suffix, shiftMs);
    await send(created);
    const adjustmentId = created.data.id as string;
    const totals = created.data.totals as { total: string; currency_code: string };
    expect(
      await api.prisma.billingAdjustment.findUniqueOrThrow({ where: { providerAdjustmentId: adjustmentId } }),
    ).toMatchObject({
      action: 'refund',
      status: 'pending_approval',
      amountTotal: Number(totals.total),
      currency: totals.currency_code,
    });
    await send(updated);
    expect(
      await api.prisma.billingAdjustment.findUniqueOrThrow({ where: { providerAdjustmentId: adjustmentId } }),
    ).toMatchObject({ status: 'approved' });
    expect(await audited('adjustment.created', created.event_id)).toBe(1);
    expect(await audited('adjustment.updated', updated.event_id)).toBe(1);
  });

  it("accepts an adjustment whose updated_at is Paddle's unset 0001-01-01, ordered by its created_at", async () => {
    const suffix = newSuffix();
    // The adjustment entity of the python-sdk Adjustments API fixture, as the data of a notification.
    const entity = fixture<{ data: Json }>('paddle', 'python-sdk.adjustments.full-entity').data;
    expect(entity.updated_at).toBe('0001-01-01T00:00:00Z');
    const shiftMs = shiftTo(entity.created_at as string);
    const envelope = (eventType: string, data: Json, occurredAt: string): PaddleEvent =>
      rebase(
        {
          event_id: 'evt_01h8c65c2ggq5nxswnnwv78e75',
          event_type: eventType,
          occurred_at: occurredAt,
          notification_id: 'ntf_01h8c65c2ggq5nxswnnwv78e75',
          data,
        },
        { suffix: `${suffix}${eventType === 'adjustment.created' ? 'c' : 'u'}`, shiftMs },
      );
    const created = envelope('adjustment.created', entity, entity.created_at as string);
    created.data.id = `adj_01h8c65c2ggq5nxswnnwv78e75${suffix}`;
    await send(created);
    expect(await archived(created.event_id)).toMatchObject({ status: 'PROCESSED' });
    const row = await api.prisma.billingAdjustment.findUniqueOrThrow({
      where: { providerAdjustmentId: created.data.id as string },
    });
    expect(row).toMatchObject({ status: 'pending_approval', amountTotal: 100, currency: 'USD' });
    // "Unset" reads as never updated since creation.
    expect(row.updatedAt.toISOString()).toBe(created.data.created_at);

    // The approval, an hour later, is newer; the unset-date event delivered again afterwards is older.
    const approvedAt = new Date(Date.parse(created.data.created_at as string) + 3_600_000).toISOString();
    const approval = { ...created, event_id: `evt_approval${suffix}`, event_type: 'adjustment.updated' };
    approval.data = { ...created.data, status: 'approved', updated_at: approvedAt };
    await send(approval);
    await send({ ...created, event_id: `evt_late${suffix}` });
    expect(
      await api.prisma.billingAdjustment.findUniqueOrThrow({
        where: { providerAdjustmentId: created.data.id as string },
      }),
    ).toMatchObject({ status: 'approved' });
  });
});
