import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CheckoutTokenService } from '../../src/modules/billing/actions/checkout-token.service.js';
import {
  checkoutToken,
  deliver,
  grants,
  lookups,
  newSubId,
  PRICE,
  subscribe,
  subscriptionEvent,
} from '../support/billing.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';
import { signedToken } from '../support/tokens.js';

describe('billing webhooks: ordering, ownership and unknown subscriptions', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    // Accepted webhooks are applied by the worker.
    await env.startWorker();
  });
  afterAll(() => env.close());

  const { userRow, subRow, archived, audits } = lookups(() => api);
  const subscribed = (tier: 'PRO' | 'TEAM' = 'PRO', at?: Date) => subscribe(api, tier, at);

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
    expect(res.outcome).toBe('skipped');
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
    const user = await createUser(api.prisma);
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
    expect(res.outcome).toBe('skipped');
    expect(await archived(early.event_id)).toMatchObject({
      status: 'SKIPPED',
      error: 'unknown_subscription',
    });
    expect(await api.prisma.subscription.count({ where: { providerSubscriptionId: subId } })).toBe(0);
    expect((await audits('webhook.skipped', early.event_id))[0].details).toMatchObject({
      reason: 'unknown_subscription',
    });
    // A second one, newer still: both are replayed in event order, the newest last.
    const later = subscriptionEvent({
      type: 'subscription.past_due',
      subId,
      status: 'past_due',
      customerId: null,
      occurredAt: new Date(t + 2000),
    });
    expect((await deliver(api, later)).outcome).toBe('skipped');

    // The created event (older, trialing) ties the subscription to the user; the parked events win.
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
    expect(await subRow(subId)).toMatchObject({ status: 'PAST_DUE', lastEventId: later.event_id });
    expect(await archived(early.event_id)).toMatchObject({ status: 'PROCESSED', error: null });
    expect(await archived(later.event_id)).toMatchObject({ status: 'PROCESSED', error: null });
    expect(await grants(api, user.id)).toHaveLength(1);
  });

  it('ties a subscription paid after its checkout token expired to the token’s user, once, and records the lateness', async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    // The overlay was opened two hours ago (token lifetime one hour) and the customer paid just now.
    const issuedLongAgo = new Date(Date.now() - 2 * 3600_000);
    const { token, expiresAt } = api.app.get(CheckoutTokenService).issue(user.id, 'PRO', issuedLongAgo);
    const created = subscriptionEvent({ type: 'subscription.created', subId, token });
    const res = await deliver(api, created);
    expect(res.outcome).toBe('processed');
    expect(await subRow(subId)).toMatchObject({ userId: user.id, status: 'ACTIVE', tier: 'PRO' });
    expect(await userRow(user.id)).toMatchObject({ currentTier: 'PRO', creditBalance: 1000 });
    expect((await grants(api, user.id)).map((g) => [g.jobId, g.delta])).toEqual([
      [`first-period:${subId}`, 1000],
    ]);
    expect(await archived(created.event_id)).toMatchObject({ status: 'PROCESSED', error: null });
    const [audit] = await audits('subscription.created', (await subRow(subId)).id);
    expect(audit.details).toMatchObject({
      credits: 1000,
      checkout_token_expired_at: expiresAt.toISOString(),
    });
    expect(await audits('webhook.skipped', created.event_id)).toHaveLength(0);

    // Later events carry the same custom_data: applied to the subscription, no second grant.
    const activated = subscriptionEvent({
      type: 'subscription.activated',
      subId,
      token,
      occurredAt: new Date(Date.now() + 1000),
    });
    expect((await deliver(api, activated)).outcome).toBe('processed');
    expect((await subRow(subId)).lastEventId).toBe(activated.event_id);
    expect(await grants(api, user.id)).toHaveLength(1);
  });

  it('skips a created event whose checkout token was forged: no row, audit with the reason', async () => {
    const user = await createUser(api.prisma);
    const [body] = checkoutToken(api, user).split('.');
    const forged = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      token: `${body}.${'A'.repeat(43)}`,
    });
    expect((await deliver(api, forged)).outcome).toBe('skipped');
    expect(await archived(forged.event_id)).toMatchObject({
      status: 'SKIPPED',
      error: 'checkout_token_bad_signature',
    });
    expect((await audits('webhook.skipped', forged.event_id))[0].details).toMatchObject({
      reason: 'checkout_token_bad_signature',
    });
    // An expired token whose claims were altered is forged too: age does not excuse a bad signature.
    const [oldBody, oldSig] = checkoutToken(api, user, 'PRO', new Date(Date.now() - 2 * 3600_000)).split('.');
    const claims = JSON.parse(Buffer.from(oldBody, 'base64url').toString());
    const stolen = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400 })).toString('base64url');
    const tampered = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      token: `${stolen}.${oldSig}`,
    });
    await deliver(api, tampered);
    expect(await archived(tampered.event_id)).toMatchObject({
      status: 'SKIPPED',
      error: 'checkout_token_bad_signature',
    });

    expect(await api.prisma.subscription.count({ where: { userId: user.id } })).toBe(0);
    expect((await userRow(user.id)).currentTier).toBe('FREE');
    expect(await grants(api, user.id)).toHaveLength(0);
  });

  it('skips a created event whose authentic checkout token carries malformed claims, without retrying', async () => {
    const user = await createUser(api.prisma);
    const claims = JSON.parse(Buffer.from(checkoutToken(api, user).split('.')[0], 'base64url').toString());
    const malformed = [
      { ...claims, u: 'not-a-uuid' },
      { ...claims, u: 'a\u0000' },
      { ...claims, u: '\ud800' },
      { ...claims, exp: 1e20 },
      { ...claims, t: 'PRO\u0000' },
    ];
    for (const bad of malformed) {
      const created = subscriptionEvent({
        type: 'subscription.created',
        subId: newSubId(),
        customerId: null,
        token: signedToken(bad, TEST_SECRETS.BILLING_WEBHOOK_SECRET),
      });
      const res = await deliver(api, created);
      expect({ bad, status: res.status, outcome: res.outcome }).toEqual({
        bad,
        status: 200,
        outcome: 'skipped',
      });
      expect(await archived(created.event_id)).toMatchObject({
        status: 'SKIPPED',
        error: 'checkout_token_malformed',
        attempts: 1,
      });
    }
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
});
