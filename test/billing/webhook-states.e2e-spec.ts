import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import {
  checkoutToken,
  createUser,
  DAY,
  deliver,
  grants,
  newSubId,
  PRICE,
  signatureFor,
  subscriptionEvent,
} from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('billing webhooks: signature and the subscription state table', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    worker = await env.startWorker();
  });
  afterAll(() => env.close());

  const userRow = (id: string) => api.prisma.user.findUniqueOrThrow({ where: { id } });
  const subRow = (subId: string) =>
    api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
  const archived = (eventId: string) =>
    api.prisma.webhookEvent.findUnique({ where: { provider_eventId: { provider: 'billing', eventId } } });
  const audits = (action: string, resourceId?: string) =>
    api.prisma.auditLog.findMany({ where: { action, ...(resourceId ? { resourceId } : {}) } });

  /** A user with a PRO subscription created through a signed checkout token. */
  async function subscribed(tier: 'PRO' | 'TEAM' = 'PRO', at = new Date(Date.now() - 60_000)) {
    const user = await createUser(api);
    const subId = newSubId();
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: PRICE[tier],
      token: checkoutToken(api, user, tier),
      occurredAt: at,
    });
    expect((await deliver(api, created)).status).toBe(200);
    return { user, subId, created, at };
  }

  describe('signature', () => {
    const event = () => subscriptionEvent({ type: 'subscription.updated', subId: newSubId() });

    const expectRefused = async (
      res: { status: number; body: unknown; headers: Record<string, string> },
      eventId: string,
    ) => {
      expect(res.status).toBe(401);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 401, code: 'invalid_signature' });
      expect(await archived(eventId)).toBeNull();
      expect(await api.prisma.processedWebhookEvent.count({ where: { eventId } })).toBe(0);
    };

    it('refuses a missing, malformed, wrong-secret or tampered signature and stores nothing', async () => {
      const e = event();
      const raw = JSON.stringify(e);
      await expectRefused(
        await api.http.post('/webhooks/billing').set('Content-Type', 'application/json').send(raw),
        e.event_id,
      );
      await expectRefused(await deliver(api, e, { signature: 'garbage' }), e.event_id);
      await expectRefused(
        await deliver(api, e, { signature: `ts=${Math.floor(Date.now() / 1000)};h1=zz` }),
        e.event_id,
      );
      await expectRefused(
        await deliver(api, e, {
          signature: signatureFor(raw, { secret: 'another-secret-of-enough-length-000000' }),
        }),
        e.event_id,
      );
      // Signed for one body, delivered with another.
      const tampered = JSON.stringify({ ...e, event_type: 'subscription.canceled' });
      await expectRefused(
        await deliver(api, e, { rawBody: tampered, signature: signatureFor(raw) }),
        e.event_id,
      );
    });

    it('refuses a signature older or newer than five minutes', async () => {
      const e = event();
      const raw = JSON.stringify(e);
      const now = Math.floor(Date.now() / 1000);
      await expectRefused(
        await deliver(api, e, { signature: signatureFor(raw, { ts: now - 301 }) }),
        e.event_id,
      );
      await expectRefused(
        await deliver(api, e, { signature: signatureFor(raw, { ts: now + 301 }) }),
        e.event_id,
      );
    });

    it('accepts any one valid h1 among several (secret rotation)', async () => {
      const e = event();
      const raw = JSON.stringify(e);
      const res = await deliver(api, e, {
        signature: signatureFor(raw, { extra: ['0'.repeat(64), 'ab'.repeat(32)] }),
      });
      expect(res.status).toBe(200);
      // Verified but for an unknown subscription: archived and skipped.
      expect(res.body).toEqual({ received: true, status: 'skipped' });
    });
  });

  it('subscription.created: inserts the row, sets the tier, grants once, audits, sends the welcome e-mail', async () => {
    const { user, subId, created } = await subscribed('PRO');
    const row = await subRow(subId);
    expect(row).toMatchObject({
      userId: user.id,
      status: 'ACTIVE',
      tier: 'PRO',
      priceId: PRICE.PRO,
      unitAmount: 1500,
      currency: 'USD',
      billingInterval: 'month',
      billingFrequency: 1,
      quantity: 1,
      providerCustomerId: `ctm_${subId}`,
      lastEventId: created.event_id,
    });
    const u = await userRow(user.id);
    expect(u).toMatchObject({ currentTier: 'PRO', creditBalance: 1000, billingCustomerId: `ctm_${subId}` });
    expect((await grants(api, user.id)).map((g) => [g.jobId, g.delta])).toEqual([[created.event_id, 1000]]);
    const [audit] = await audits('subscription.created', row.id);
    expect(audit).toMatchObject({ actor: 'webhook:billing', userId: user.identityUserId });
    expect(audit.details).toMatchObject({
      event_id: created.event_id,
      tier: 'PRO',
      previous_tier: 'FREE',
      credits: 1000,
    });
    expect(await archived(created.event_id)).toMatchObject({
      status: 'PROCESSED',
      eventType: 'subscription.created',
    });
    const mail = await waitFor(() =>
      api.prisma.emailMessage.findUnique({ where: { idempotencyKey: `subscription-welcome-${row.id}` } }),
    );
    expect(mail).toMatchObject({ status: 'sent', templateKey: 'subscription_welcome', userId: user.id });

    // A replay reuses the event id with a new notification id: acknowledged, nothing happens twice.
    const replay = await deliver(api, { ...created, notification_id: 'ntf_replay' });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ received: true, status: 'duplicate' });
    expect(await grants(api, user.id)).toHaveLength(1);
    expect(await audits('subscription.created', row.id)).toHaveLength(1);
    expect(worker).toBeDefined();
  });

  it('subscription.updated: syncs row and tier (mid-cycle change) without a grant', async () => {
    const { user, subId } = await subscribed('PRO');
    const res = await deliver(
      api,
      subscriptionEvent({ type: 'subscription.updated', subId, priceId: PRICE.TEAM, unitAmount: '4900' }),
    );
    expect(res.body).toEqual({ received: true, status: 'processed' });
    expect(await subRow(subId)).toMatchObject({ tier: 'TEAM', priceId: PRICE.TEAM, unitAmount: 4900 });
    expect((await userRow(user.id)).currentTier).toBe('TEAM');
    expect(await grants(api, user.id)).toHaveLength(1);
    expect((await userRow(user.id)).creditBalance).toBe(1000);
    expect(await audits('subscription.updated', (await subRow(subId)).id)).toHaveLength(1);
  });

  it('subscription.activated: trial to paid syncs the status without a grant', async () => {
    const user = await createUser(api);
    const subId = newSubId();
    const at = new Date(Date.now() - 120_000);
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.created',
        subId,
        status: 'trialing',
        token: checkoutToken(api, user),
        occurredAt: at,
      }),
    );
    expect((await subRow(subId)).status).toBe('TRIALING');
    expect((await userRow(user.id)).currentTier).toBe('PRO');
    await deliver(api, subscriptionEvent({ type: 'subscription.activated', subId, status: 'active' }));
    expect((await subRow(subId)).status).toBe('ACTIVE');
    expect(await grants(api, user.id)).toHaveLength(1);
  });

  it('subscription.paused keeps the tier; subscription.resumed syncs status and period end', async () => {
    const { user, subId } = await subscribed('TEAM');
    const pausedAt = new Date(Date.now() - 30_000);
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.paused',
        subId,
        priceId: PRICE.TEAM,
        status: 'paused',
        periodEnd: null,
        pausedAt,
        occurredAt: pausedAt,
      }),
    );
    expect(await subRow(subId)).toMatchObject({ status: 'PAUSED', currentPeriodEnd: null });
    expect((await subRow(subId)).pausedAt?.toISOString()).toBe(pausedAt.toISOString());
    expect((await userRow(user.id)).currentTier).toBe('TEAM');
    expect(await audits('subscription.paused', (await subRow(subId)).id)).toHaveLength(1);

    const newEnd = new Date(Date.now() + 30 * DAY);
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.resumed',
        subId,
        priceId: PRICE.TEAM,
        status: 'active',
        periodEnd: newEnd,
      }),
    );
    const row = await subRow(subId);
    expect(row.status).toBe('ACTIVE');
    expect(row.currentPeriodEnd?.toISOString()).toBe(newEnd.toISOString());
    expect((await userRow(user.id)).currentTier).toBe('TEAM');
    expect(await grants(api, user.id)).toHaveLength(1);
  });

  it('subscription.past_due keeps access', async () => {
    const { user, subId } = await subscribed('PRO');
    await deliver(api, subscriptionEvent({ type: 'subscription.past_due', subId, status: 'past_due' }));
    expect((await subRow(subId)).status).toBe('PAST_DUE');
    expect((await userRow(user.id)).currentTier).toBe('PRO');
  });

  it('subscription.canceled at period end: CANCELED with canceled_at, access until period end', async () => {
    const { user, subId } = await subscribed('PRO');
    const canceledAt = new Date(Date.now() - 1000);
    const periodEnd = new Date(Date.now() + 10 * DAY);
    await deliver(
      api,
      subscriptionEvent({ type: 'subscription.canceled', subId, status: 'canceled', canceledAt, periodEnd }),
    );
    const row = await subRow(subId);
    expect(row).toMatchObject({ status: 'CANCELED', expiredAt: null });
    expect(row.canceledAt?.toISOString()).toBe(canceledAt.toISOString());
    expect((await userRow(user.id)).currentTier).toBe('PRO');
    const res = await api.http
      .get('/api/v1/billing/subscription')
      .set('Authorization', await api.bearer(user.identityUserId));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: row.id,
      status: 'CANCELED',
      tier: 'PRO',
      canceled_at: canceledAt.toISOString(),
    });
  });

  it('subscription.cancelled (British spelling) with the period over downgrades now (cancel_immediately)', async () => {
    const { user, subId } = await subscribed('TEAM');
    const canceledAt = new Date(Date.now() - 1000);
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.cancelled',
        subId,
        priceId: PRICE.TEAM,
        status: 'canceled',
        canceledAt,
        periodEnd: null,
      }),
    );
    const row = await subRow(subId);
    expect(row.status).toBe('CANCELED');
    expect(row.expiredAt).not.toBeNull();
    expect((await userRow(user.id)).currentTier).toBe('FREE');
    const [audit] = await audits('subscription.canceled', row.id);
    expect(audit.details).toMatchObject({
      event_type: 'subscription.cancelled',
      tier: 'FREE',
      previous_tier: 'TEAM',
    });
    // Expired: nothing current to show.
    const res = await api.http
      .get('/api/v1/billing/subscription')
      .set('Authorization', await api.bearer(user.identityUserId));
    expect(res.status).toBe(404);
  });

  it('never lets an older event overwrite newer state', async () => {
    const { user, subId } = await subscribed('PRO', new Date(Date.now() - 10 * 60_000));
    const t = Date.now() - 60_000;
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.updated',
        subId,
        priceId: PRICE.TEAM,
        occurredAt: new Date(t),
      }),
    );
    const stale = subscriptionEvent({
      type: 'subscription.updated',
      subId,
      priceId: PRICE.PRO,
      occurredAt: new Date(t - 5000),
    });
    const res = await deliver(api, stale);
    expect(res.body).toEqual({ received: true, status: 'skipped' });
    expect(await subRow(subId)).toMatchObject({ tier: 'TEAM', priceId: PRICE.TEAM });
    expect((await userRow(user.id)).currentTier).toBe('TEAM');
    expect(await archived(stale.event_id)).toMatchObject({ status: 'SKIPPED', error: 'stale_event' });
    // A late pause from before the change does not pause it either.
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.paused',
        subId,
        status: 'paused',
        occurredAt: new Date(t - 1000),
      }),
    );
    expect((await subRow(subId)).status).toBe('ACTIVE');
  });

  it('parks an event for an unknown subscription as SKIPPED and applies it once the subscription is known', async () => {
    const user = await createUser(api);
    const subId = newSubId();
    const t = Date.now() - 60_000;
    const early = subscriptionEvent({
      type: 'subscription.activated',
      subId,
      status: 'active',
      customerId: null,
      occurredAt: new Date(t + 1000),
    });
    const res = await deliver(api, early);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, status: 'skipped' });
    expect(await archived(early.event_id)).toMatchObject({
      status: 'SKIPPED',
      error: 'unknown_subscription',
    });
    expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(0);
    expect((await audits('webhook.skipped', early.event_id))[0].details).toMatchObject({
      reason: 'unknown_subscription',
    });

    // The created event (older, trialing) ties the subscription to the user; the parked activation wins.
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.created',
        subId,
        status: 'trialing',
        token: checkoutToken(api, user),
        occurredAt: new Date(t),
      }),
    );
    expect(await subRow(subId)).toMatchObject({ status: 'ACTIVE', lastEventId: early.event_id });
    expect(await archived(early.event_id)).toMatchObject({ status: 'PROCESSED', error: null });
    expect(await grants(api, user.id)).toHaveLength(1);
  });

  it('skips a created event whose checkout token expired or was forged: no row, audit with the reason', async () => {
    const user = await createUser(api);
    const issuedLongAgo = new Date(Date.now() - 2 * 3600_000);
    const expired = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      token: checkoutToken(api, user, 'PRO', issuedLongAgo),
    });
    const res = await deliver(api, expired);
    expect(res.body).toEqual({ received: true, status: 'skipped' });
    expect(await archived(expired.event_id)).toMatchObject({
      status: 'SKIPPED',
      error: 'checkout_token_expired',
    });
    expect((await audits('webhook.skipped', expired.event_id))[0].details).toMatchObject({
      reason: 'checkout_token_expired',
    });

    const [body] = checkoutToken(api, user).split('.');
    const forged = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      token: `${body}.${'A'.repeat(43)}`,
    });
    await deliver(api, forged);
    expect(await archived(forged.event_id)).toMatchObject({
      status: 'SKIPPED',
      error: 'checkout_token_bad_signature',
    });

    expect(await api.prisma.subscription.count({ where: { userId: user.id } })).toBe(0);
    expect((await userRow(user.id)).currentTier).toBe('FREE');
    expect(await grants(api, user.id)).toHaveLength(0);
  });

  it('finds the owner of a later subscription through the stored customer id', async () => {
    const { user, subId } = await subscribed('PRO');
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.canceled',
        subId,
        status: 'canceled',
        periodEnd: null,
        canceledAt: new Date(),
      }),
    );
    expect((await userRow(user.id)).currentTier).toBe('FREE');
    const second = newSubId();
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.created',
        subId: second,
        customerId: `ctm_${subId}`,
        priceId: PRICE.TEAM,
      }),
    );
    expect((await subRow(second)).userId).toBe(user.id);
    expect((await userRow(user.id)).currentTier).toBe('TEAM');
  });

  it('answers 400 to a verified but invalid payload, archives it FAILED and lets a retry through', async () => {
    const user = await createUser(api);
    const e = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      token: checkoutToken(api, user),
    });
    const broken = { ...e, data: { ...e.data, items: [] } };
    const res = await deliver(api, broken);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_payload' });
    expect(await archived(e.event_id)).toMatchObject({ status: 'FAILED' });
    expect(await audits('webhook.failed', e.event_id)).toHaveLength(1);
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: e.event_id } })).toBe(0);

    const garbage = await deliver(api, {}, { rawBody: 'not json' });
    expect(garbage.status).toBe(400);

    // Same event id, corrected body (e.g. after a schema fix): processed once.
    expect((await deliver(api, e)).body).toEqual({ received: true, status: 'processed' });
    expect(await archived(e.event_id)).toMatchObject({ status: 'PROCESSED', attempts: 2 });
  });

  it('acknowledges event types it does not handle', async () => {
    const e = {
      event_id: 'evt_customer_1',
      event_type: 'customer.updated',
      occurred_at: new Date().toISOString(),
      data: { id: 'ctm_1' },
    };
    expect((await deliver(api, e)).body).toEqual({ received: true, status: 'skipped' });
    expect(await archived('evt_customer_1')).toMatchObject({
      status: 'SKIPPED',
      error: 'unhandled_event_type',
    });
  });

  it('GET /billing/subscription answers 404 without a subscription and only shows the caller’s own', async () => {
    const other: User = await createUser(api);
    const res = await api.http
      .get('/api/v1/billing/subscription')
      .set('Authorization', await api.bearer(other.identityUserId));
    expect(res.status).toBe(404);
    const { user, subId } = await subscribed('PRO');
    const mine = await api.http
      .get('/api/v1/billing/subscription')
      .set('Authorization', await api.bearer(user.identityUserId));
    expect(mine.body).toMatchObject({
      status: 'ACTIVE',
      tier: 'PRO',
      provider_subscription_id: subId,
      scheduled_change: null,
      canceled_at: null,
    });
    expect(Object.keys(mine.body)).toEqual(
      expect.arrayContaining([
        'id',
        'status',
        'tier',
        'current_period_end',
        'canceled_at',
        'scheduled_change',
      ]),
    );
  });
});
