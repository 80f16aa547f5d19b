import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  checkoutToken,
  DAY,
  deliver,
  grants,
  lookups,
  newSubId,
  PRICE,
  subscribe,
  subscriptionEvent,
} from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('billing webhooks: every row of the subscription state table', () => {
  let env: TestEnv;
  let api: ApiApp;
  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    // The worker sends the welcome e-mail the created test waits for.
    await env.startWorker();
  });
  afterAll(() => env.close());

  const { userRow, subRow, archived, audits } = lookups(() => api);
  const subscribed = (tier: 'PRO' | 'TEAM' = 'PRO', at?: Date) => subscribe(api, tier, at);

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
    expect((await grants(api, user.id)).map((g) => [g.jobId, g.delta])).toEqual([
      [`first-period:${subId}`, 1000],
    ]);
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
    expect(replay.outcome).toBe('duplicate');
    expect(await grants(api, user.id)).toHaveLength(1);
    expect(await audits('subscription.created', row.id)).toHaveLength(1);
  });

  it('subscription.updated: syncs row and tier (mid-cycle change) without a grant', async () => {
    const { user, subId } = await subscribed('PRO');
    const res = await deliver(
      api,
      subscriptionEvent({ type: 'subscription.updated', subId, priceId: PRICE.TEAM, unitAmount: '4900' }),
    );
    expect(res.outcome).toBe('processed');
    expect(await subRow(subId)).toMatchObject({ tier: 'TEAM', priceId: PRICE.TEAM, unitAmount: 4900 });
    expect((await userRow(user.id)).currentTier).toBe('TEAM');
    expect(await grants(api, user.id)).toHaveLength(1);
    expect((await userRow(user.id)).creditBalance).toBe(1000);
    expect(await audits('subscription.updated', (await subRow(subId)).id)).toHaveLength(1);
  });

  it('subscription.activated: trial to paid syncs the status without a grant', async () => {
    const user = await createUser(api.prisma);
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

  it('subscription.canceled without canceled_at in the payload sets canceled_at to the event time', async () => {
    const { user, subId } = await subscribed('PRO');
    const occurredAt = new Date(Date.now() - 2000);
    const event = subscriptionEvent({
      type: 'subscription.canceled',
      subId,
      status: 'canceled',
      canceledAt: null,
      occurredAt,
      periodEnd: new Date(Date.now() + 10 * DAY),
    });
    expect(event.data.canceled_at).toBeNull();
    expect((await deliver(api, event)).outcome).toBe('processed');
    const row = await subRow(subId);
    expect(row.status).toBe('CANCELED');
    expect(row.canceledAt?.toISOString()).toBe(occurredAt.toISOString());
    const res = await api.http
      .get('/api/v1/billing/subscription')
      .set('Authorization', await api.bearer(user.identityUserId));
    expect(res.body).toMatchObject({ status: 'CANCELED', canceled_at: occurredAt.toISOString() });
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

  it.each([
    ['subscription.past_due', 'past_due', 'PAST_DUE'],
    ['subscription.paused', 'paused', 'PAUSED'],
  ] as const)(
    'a %s newer than an immediate cancel restores access, as the newest state says (the tier follows it)',
    async (type, status, stored) => {
      const { user, subId } = await subscribed('TEAM');
      const canceledAt = new Date(Date.now() - 30_000);
      const cancel = subscriptionEvent({
        type: 'subscription.canceled',
        subId,
        priceId: PRICE.TEAM,
        status: 'canceled',
        canceledAt,
        occurredAt: canceledAt,
        periodEnd: null,
      });
      expect((await deliver(api, cancel)).outcome).toBe('processed');
      expect((await userRow(user.id)).currentTier).toBe('FREE');
      // Odd provider data, a replay or a backfill: the provider's newer state is a live one.
      const newer = subscriptionEvent({ type, subId, priceId: PRICE.TEAM, status, occurredAt: new Date() });
      expect((await deliver(api, newer)).outcome).toBe('processed');
      const row = await subRow(subId);
      expect({ status: row.status, expiredAt: row.expiredAt }).toEqual({ status: stored, expiredAt: null });
      // Past due and paused never revoke access: the user's tier agrees with the row.
      expect((await userRow(user.id)).currentTier).toBe('TEAM');
    },
  );

  it('GET /billing/subscription answers 404 without a subscription and only shows the caller’s own', async () => {
    const other = await createUser(api.prisma);
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
