import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { User } from '../../src/generated/prisma/client.js';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { SubscriptionExpiryService } from '../../src/modules/billing/jobs/subscription-expiry.service.js';
import { FakeBillingApi } from '../fakes/billing-api.js';
import {
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

/**
 * Spec operation table: "change, target_tier = any other paid tier (higher or lower): access at the current
 * tier until current_period_end, then the new price". DESIGN.md 5c: current_tier is kept until then and
 * GET /billing/subscription shows scheduled_change {action: "tier_change", tier, effective_at}.
 */
describe('billing: a change to another paid tier takes effect at the period end', () => {
  let env: TestEnv;
  let api: ApiApp;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    billing = await FakeBillingApi.start();
    env = await TestEnv.create({ env: { BILLING_API_URL: billing.url, BILLING_API_KEY: 'pdl_test_key' } });
    env.onClose(() => billing.close());
    api = await env.startApi();
    // Accepted webhooks are applied by the worker.
    await env.startWorker();
    api.app.get(HttpClient).backoffBaseMs = 5;
  });
  afterAll(() => env.close());

  const tierOf = async (user: User) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier;
  const getSubscription = async (user: User) =>
    api.http.get('/api/v1/billing/subscription').set('Authorization', await api.bearer(user.identityUserId));
  const change = async (user: User, target: string) =>
    api.http
      .post('/api/v1/billing/subscription/change')
      .set('Authorization', await api.bearer(user.identityUserId))
      .send({ target_tier: target });

  /** A subscription on `tier` whose current period runs from `start` to `end`. */
  async function subscribedFor(tier: 'PRO' | 'TEAM', start: Date, end: Date) {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const event = (type: string, priceId: string, occurredAt: Date) =>
      subscriptionEvent({ type, subId, priceId, periodStart: start, periodEnd: end, occurredAt });
    const created = {
      ...event('subscription.created', PRICE[tier], new Date(start.getTime() + 1000)),
    };
    created.data.custom_data = { checkout_token: checkoutToken(api, user, tier) };
    expect((await deliver(api, created)).status).toBe(200);
    billing.seed(subId, 'active', PRICE[tier]);
    return { user, subId, event };
  }

  it('a downgrade keeps the paid tier until the renewal opens the next period, which grants the new tier', async () => {
    const start = new Date(Date.now() - 10 * DAY);
    const end = new Date(Date.now() + 20 * DAY);
    const { user, subId, event } = await subscribedFor('TEAM', start, end);
    expect(await tierOf(user)).toBe('TEAM');

    expect((await change(user, 'PRO')).status).toBe(200);
    // The provider's subscription.updated names the new price at once, for the period that is running.
    const updated = event('subscription.updated', PRICE.PRO, new Date());
    expect((await deliver(api, updated)).outcome).toBe('processed');
    expect(await tierOf(user)).toBe('TEAM');
    const res = await getSubscription(user);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      tier: 'TEAM',
      price_id: PRICE.PRO,
      scheduled_change: { action: 'tier_change', tier: 'PRO', effective_at: end.toISOString() },
    });
    const me = await api.http.get('/api/v1/me').set('Authorization', await api.bearer(user.identityUserId));
    expect(me.body.current_tier).toBe('TEAM');
    // Asking for the tier already scheduled is the same tier; asking for the one in effect reverts.
    expect((await change(user, 'PRO')).body).toMatchObject({ status: 409, code: 'same_tier' });

    // The renewal: subscription.updated of the next period, then its transaction.
    const nextEnd = new Date(end.getTime() + 30 * DAY);
    const renewed = subscriptionEvent({
      type: 'subscription.updated',
      subId,
      priceId: PRICE.PRO,
      periodStart: end,
      periodEnd: nextEnd,
      occurredAt: new Date(Date.now() + 1000),
    });
    expect((await deliver(api, renewed)).status).toBe(200);
    expect(await tierOf(user)).toBe('PRO');
    expect((await getSubscription(user)).body).toMatchObject({ tier: 'PRO', scheduled_change: null });
    const renewal = transactionEvent({ subId, priceId: PRICE.PRO });
    await deliver(api, renewal);
    const ledger = await grants(api, user.id);
    expect(ledger.map((g) => [g.jobId, g.delta])).toEqual([
      [`first-period:${subId}`, 5000],
      [renewal.data.id, 1000],
    ]);
  });

  it('an upgrade also waits; reverting before the period end cancels the pending change', async () => {
    const start = new Date(Date.now() - 5 * DAY);
    const end = new Date(Date.now() + 25 * DAY);
    const { user, event } = await subscribedFor('PRO', start, end);
    await deliver(api, event('subscription.updated', PRICE.TEAM, new Date(Date.now() - 2000)));
    expect(await tierOf(user)).toBe('PRO');
    expect((await getSubscription(user)).body.scheduled_change).toMatchObject({
      action: 'tier_change',
      tier: 'TEAM',
    });
    expect((await change(user, 'PRO')).status).toBe(200);
    await deliver(api, event('subscription.updated', PRICE.PRO, new Date(Date.now() - 1000)));
    expect(await tierOf(user)).toBe('PRO');
    expect((await getSubscription(user)).body).toMatchObject({ tier: 'PRO', scheduled_change: null });
    const row = await api.prisma.subscription.findFirstOrThrow({ where: { userId: user.id } });
    expect(row).toMatchObject({ pendingTier: null, pendingTierAt: null });
  });

  it('the hourly job applies a change whose period end passed without a renewal event, and audits it', async () => {
    const start = new Date(Date.now() - 29 * DAY);
    const end = new Date(Date.now() + 1500);
    const { user, subId, event } = await subscribedFor('PRO', start, end);
    await deliver(api, event('subscription.updated', PRICE.TEAM, new Date(Date.now() - 1000)));
    expect(await tierOf(user)).toBe('PRO');

    const expiry = api.app.get(SubscriptionExpiryService);
    expect((await expiry.expireLapsed(new Date())).tier_changes).toBe(0);
    expect(await tierOf(user)).toBe('PRO');
    const later = new Date(end.getTime() + 1000);
    expect((await expiry.expireLapsed(later)).tier_changes).toBe(1);
    expect(await tierOf(user)).toBe('TEAM');
    const [audit] = await api.prisma.auditLog.findMany({
      where: { action: 'subscription.tier_changed', userId: user.identityUserId },
    });
    expect(audit.details).toMatchObject({
      subscription_id: subId,
      subscription_tier: 'TEAM',
      previous_subscription_tier: 'PRO',
      tier: 'TEAM',
      previous_tier: 'PRO',
    });
    expect((await expiry.expireLapsed(later)).tier_changes).toBe(0);
  });

  it('a renewal transaction after the period end applies the change and grants the new tier', async () => {
    const start = new Date(Date.now() - 29 * DAY);
    const end = new Date(Date.now() + 1200);
    const { user, subId, event } = await subscribedFor('TEAM', start, end);
    await deliver(api, event('subscription.updated', PRICE.PRO, new Date(Date.now() - 1000)));
    expect(await tierOf(user)).toBe('TEAM');
    await new Promise((resolve) => setTimeout(resolve, end.getTime() - Date.now() + 100));
    const renewal = transactionEvent({ subId, priceId: PRICE.PRO });
    expect((await deliver(api, renewal)).outcome).toBe('processed');
    expect(await tierOf(user)).toBe('PRO');
    expect((await grants(api, user.id)).find((g) => g.jobId === renewal.data.id)?.delta).toBe(1000);
  });
});
