import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { isOutageFailure } from '../../src/infra/queue/job-failure.js';
import { CheckoutTokenService } from '../../src/modules/billing/actions/checkout-token.service.js';
import { UserHooks } from '../../src/modules/users/user-hooks.js';
import { FakeBillingApi } from '../fakes/billing-api.js';
import { checkoutToken, deliver, newSubId, PRICE, subscriptionEvent } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('billing endpoints and provider operations', () => {
  /**
   * What the billing actions sent: a past_due subscription also makes the worker's dunning job read the
   * update-payment link (GET /subscriptions/:id, issue 19), at a moment of its own.
   */
  const requestsOfActions = () =>
    billing.requests.filter((r) => !(r.method === 'GET' && /^\/subscriptions\/[^/]+$/.test(r.path)));
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    billing = await FakeBillingApi.start();
    env = await TestEnv.create({ env: { BILLING_API_URL: billing.url, BILLING_API_KEY: 'pdl_test_key' } });
    env.onClose(() => billing.close());
    api = await env.startApi();
    worker = await env.startWorker();
    api.app.get(HttpClient).backoffBaseMs = 5;
    worker.get(HttpClient).backoffBaseMs = 5;
  });
  afterAll(() => env.close());
  beforeEach(() => billing.reset());

  const post = async (user: User, path: string, body?: object) => {
    const req = api.http
      .post(`/api/v1/billing/${path}`)
      .set('Authorization', await api.bearer(user.identityUserId));
    return body === undefined ? req : req.send(body);
  };
  const auditsOf = (user: User, action: string) =>
    api.prisma.auditLog.findMany({
      where: { action, userId: user.identityUserId },
      orderBy: { createdAt: 'asc' },
    });

  async function subscribed(
    tier: 'PRO' | 'TEAM' = 'PRO',
    status: 'active' | 'paused' | 'past_due' = 'active',
  ) {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    // The provider knows the subscription before its events arrive (the dunning job reads its
    // update-payment link from it: issue 19).
    billing.seedEntity({
      id: subId,
      status,
      items: [{ price: { id: PRICE[tier] }, quantity: 1 }],
      management_urls: {
        update_payment_method: `https://sandbox-buyer-portal.paddle.com/subscriptions/${subId}/update-payment-method`,
        cancel: `https://sandbox-buyer-portal.paddle.com/subscriptions/${subId}/cancel`,
      },
    });
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE[tier],
        token: checkoutToken(api, user, tier),
        occurredAt: new Date(Date.now() - 60_000),
      }),
    );
    if (status === 'paused')
      await deliver(
        api,
        subscriptionEvent({
          type: 'subscription.paused',
          subId,
          priceId: PRICE[tier],
          status: 'paused',
          periodEnd: null,
        }),
      );
    if (status === 'past_due') {
      await deliver(
        api,
        subscriptionEvent({ type: 'subscription.past_due', subId, priceId: PRICE[tier], status: 'past_due' }),
      );
      // The dunning e-mail's link look-up is the worker's, not the action under test: let it finish first.
      await waitFor(() =>
        api.prisma.emailMessage.findFirst({ where: { userId: user.id, templateKey: 'payment_failed' } }),
      );
      const lookup = billing.requests.filter(
        (r) => r.method === 'GET' && r.path === `/subscriptions/${subId}`,
      );
      for (const request of lookup) billing.requests.splice(billing.requests.indexOf(request), 1);
    }
    const row = await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
    return { user, subId, row };
  }

  describe('checkout', () => {
    it('issues a signed token carrying tier, user id, expiry and a nonce', async () => {
      const user = await createUser(api.prisma);
      const res = await post(user, 'checkout-token', { tier: 'PRO' });
      expect(res.status).toBe(200);
      // price_id: the price to open the provider's checkout with (added with annual plans).
      expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'price_id', 'token']);
      expect(res.body.price_id).toBe(PRICE.PRO);
      const tokens = api.app.get(CheckoutTokenService);
      const check = tokens.verify(res.body.token);
      expect(check).toMatchObject({
        ok: true,
        claims: { userId: user.id, tier: 'PRO', nonce: expect.stringMatching(/^[\w-]{16,}$/) },
      });
      const ttl = new Date(res.body.expires_at).getTime() - Date.now();
      expect(ttl).toBeGreaterThan(3500_000);
      expect(ttl).toBeLessThanOrEqual(3600_000);
      const again = await post(user, 'checkout-token', { tier: 'PRO' });
      expect(again.body.token).not.toBe(res.body.token);
      // Same user, tier and (often) the same second: the nonce is what makes each token unique.
      const nonceOf = (token: string) => {
        const verified = tokens.verify(token);
        if (!verified.ok) throw new Error(`token did not verify: ${verified.reason}`);
        return verified.claims.nonce;
      };
      expect(nonceOf(again.body.token)).not.toBe(nonceOf(res.body.token));
      expect(tokens.verify(res.body.token, new Date(Date.now() + 3601_000))).toEqual({
        ok: false,
        reason: 'expired',
      });
    });

    it('returns what the checkout overlay needs', async () => {
      const user = await createUser(api.prisma);
      const res = await post(user, 'checkout', { tier: 'TEAM' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        price_id: PRICE.TEAM,
        customer_email: user.email,
        custom_data: { checkout_token: expect.any(String) },
      });
      // Never an already expired token: it is minted now and checked against now, with the full lifetime ahead.
      expect(api.app.get(CheckoutTokenService).verify(res.body.custom_data.checkout_token)).toMatchObject({
        ok: true,
        claims: { tier: 'TEAM', userId: user.id },
      });
      expect(new Date(res.body.expires_at).getTime() - Date.now()).toBeGreaterThan(3500_000);
    });

    it('refuses FREE, unknown tiers, extra fields and anonymous callers', async () => {
      const user = await createUser(api.prisma);
      for (const body of [{ tier: 'FREE' }, { tier: 'GOLD' }, {}, { tier: 'PRO', user_id: 'x' }]) {
        const res = await post(user, 'checkout-token', body);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'validation_failed' });
      }
      expect((await post(user, 'checkout', { tier: 'FREE' })).status).toBe(400);
      expect((await api.http.post('/api/v1/billing/checkout-token').send({ tier: 'PRO' })).status).toBe(401);
    });

    it('refuses a second subscription through checkout and checkout-token while one is live (active, past_due, paused)', async () => {
      for (const status of ['active', 'past_due', 'paused'] as const) {
        const { user } = await subscribed('PRO', status);
        for (const path of ['checkout', 'checkout-token']) {
          const res = await post(user, path, { tier: 'TEAM' });
          expect(res.status).toBe(409);
          expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
          expect(res.body).toMatchObject({ status: 409, code: 'subscription_exists' });
        }
      }
    });

    it('issues a checkout token again once the subscription is canceled and its access over', async () => {
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
      expect((await post(user, 'checkout-token', { tier: 'TEAM' })).status).toBe(200);
      expect((await post(user, 'checkout', { tier: 'TEAM' })).status).toBe(200);
    });

    it('documents the billing routes in the OpenAPI document', async () => {
      const res = await api.http.get('/docs/openapi.json');
      expect(res.status).toBe(200);
      for (const path of [
        'checkout-token',
        'checkout',
        'subscription',
        'subscription/cancel',
        'subscription/change',
        'subscription/resume',
      ]) {
        expect(res.body.paths).toHaveProperty([`/api/v1/billing/${path}`]);
      }
      expect(res.body.paths).toHaveProperty(['/webhooks/billing']);
    });
  });

  describe('cancel', () => {
    it('cancels at period end by default; local state waits for the webhook', async () => {
      const { user, subId, row } = await subscribed('PRO');
      const res = await post(user, 'subscription/cancel', {});
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        subscription_id: row.id,
        action: 'cancel',
        effective_from: 'next_billing_period',
        provider_status: 'active',
        scheduled_change: { action: 'cancel' },
      });
      expect(billing.requests).toEqual([
        {
          method: 'POST',
          path: `/subscriptions/${subId}/cancel`,
          authorization: 'Bearer pdl_test_key',
          body: { effective_from: 'next_billing_period' },
        },
      ]);
      expect(await api.prisma.subscription.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({
        status: 'ACTIVE',
        scheduledChange: null,
      });
      const [audit] = await auditsOf(user, 'billing.cancel_requested');
      expect(audit.details).toMatchObject({
        cancel_immediately: false,
        effective_from: 'next_billing_period',
        status: 'accepted',
        subscription_id: subId,
      });
    });

    it('cancels immediately on request; the webhook then downgrades', async () => {
      const { user, subId } = await subscribed('TEAM');
      const res = await post(user, 'subscription/cancel', { cancel_immediately: true });
      expect(res.body).toMatchObject({ effective_from: 'immediately', provider_status: 'canceled' });
      expect(billing.requests[0].body).toEqual({ effective_from: 'immediately' });
      expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('TEAM');
      await deliver(
        api,
        subscriptionEvent({
          type: 'subscription.canceled',
          subId,
          priceId: PRICE.TEAM,
          status: 'canceled',
          periodEnd: null,
          canceledAt: new Date(),
        }),
      );
      expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('FREE');
    });

    it('cancels a paused or past_due subscription immediately: the user can always stop paying', async () => {
      for (const status of ['paused', 'past_due'] as const) {
        billing.reset();
        const { user, subId } = await subscribed('PRO', status);
        const res = await post(user, 'subscription/cancel', {});
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ effective_from: 'immediately', provider_status: 'canceled' });
        expect(requestsOfActions()).toMatchObject([
          { method: 'POST', path: `/subscriptions/${subId}/cancel`, body: { effective_from: 'immediately' } },
        ]);
        const [audit] = await auditsOf(user, 'billing.cancel_requested');
        expect(audit.details).toMatchObject({
          cancel_immediately: false,
          effective_from: 'immediately',
          previous_status: status.toUpperCase(),
          status: 'accepted',
        });
      }
    });

    it('refuses to schedule a cancel that is already scheduled, but lets the user cancel now', async () => {
      const { user, subId } = await subscribed('PRO');
      // The provider's subscription.updated has synced the scheduled cancel.
      await deliver(
        api,
        subscriptionEvent({
          type: 'subscription.updated',
          subId,
          scheduledChange: {
            action: 'cancel',
            effective_at: new Date(Date.now() + 10 * 86_400_000).toISOString(),
            resume_at: null,
          },
        }),
      );
      const again = await post(user, 'subscription/cancel', {});
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ code: 'cancel_already_scheduled' });
      const toFree = await post(user, 'subscription/change', { target_tier: 'FREE' });
      expect(toFree.status).toBe(409);
      expect(toFree.body).toMatchObject({ code: 'cancel_already_scheduled' });
      expect(billing.requests).toHaveLength(0);
      const now = await post(user, 'subscription/cancel', { cancel_immediately: true });
      expect(now.status).toBe(200);
      expect(billing.requests).toMatchObject([{ body: { effective_from: 'immediately' } }]);
    });

    it('answers a cancel sent again before the webhook synced the first like a synced one: 409, not 502', async () => {
      const { user, subId } = await subscribed('PRO');
      expect((await post(user, 'subscription/cancel', {})).status).toBe(200);
      // A double click: the row has no scheduled change yet; the provider refuses a second one.
      const again = await post(user, 'subscription/cancel', {});
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ code: 'cancel_already_scheduled' });
      const toFree = await post(user, 'subscription/change', { target_tier: 'FREE' });
      expect(toFree.status).toBe(409);
      expect(toFree.body).toMatchObject({ code: 'cancel_already_scheduled' });
      const cancel = { method: 'POST', path: `/subscriptions/${subId}/cancel` };
      const read = { method: 'GET', path: `/subscriptions/${subId}` };
      expect(billing.requests).toMatchObject([cancel, cancel, read, cancel, read]);
      const audits = await auditsOf(user, 'billing.cancel_requested');
      expect(audits.map((a) => (a.details as { status: string }).status)).toEqual(['accepted', 'failed']);
      expect(audits[1].details).toMatchObject({ error: 'cancel_already_scheduled' });
      // Cancelling now still works.
      expect((await post(user, 'subscription/cancel', { cancel_immediately: true })).status).toBe(200);
    });

    it('still answers 502 when the provider refuses a cancel that its state does not show scheduled', async () => {
      const { user, subId } = await subscribed('PRO');
      billing.failNext(400);
      const res = await post(user, 'subscription/cancel', {});
      expect(res.status).toBe(502);
      expect(res.body).toMatchObject({ code: 'billing_rejected' });
      expect(billing.requests).toMatchObject([
        { method: 'POST', path: `/subscriptions/${subId}/cancel` },
        { method: 'GET', path: `/subscriptions/${subId}` },
      ]);
    });

    it('answers 409 without an active subscription, and 400 for a non-boolean flag', async () => {
      const user = await createUser(api.prisma);
      const res = await post(user, 'subscription/cancel');
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 'no_active_subscription' });
      expect((await post(user, 'subscription/cancel', { cancel_immediately: 'yes' })).status).toBe(400);
      expect(billing.requests).toHaveLength(0);
    });
  });

  describe('change', () => {
    it('moves to another paid tier with a prorated price update', async () => {
      const { user, subId } = await subscribed('PRO');
      const res = await post(user, 'subscription/change', { target_tier: 'TEAM' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ action: 'change', target_tier: 'TEAM' });
      expect(billing.requests).toEqual([
        {
          method: 'PATCH',
          path: `/subscriptions/${subId}`,
          authorization: 'Bearer pdl_test_key',
          body: {
            items: [{ price_id: PRICE.TEAM, quantity: 1 }],
            proration_billing_mode: 'prorated_next_billing_period',
          },
        },
      ]);
      // The provider is the source of truth: the tier moves when subscription.updated arrives.
      expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('PRO');
      const [audit] = await auditsOf(user, 'billing.change_requested');
      expect(audit.details).toMatchObject({
        tier: 'PRO',
        target_tier: 'TEAM',
        status: 'accepted',
        price_id: PRICE.TEAM,
      });
    });

    it('FREE cancels at period end', async () => {
      const { user, subId } = await subscribed('TEAM');
      const res = await post(user, 'subscription/change', { target_tier: 'FREE' });
      expect(res.body).toMatchObject({ effective_from: 'next_billing_period', target_tier: 'FREE' });
      expect(billing.requests).toMatchObject([
        {
          method: 'POST',
          path: `/subscriptions/${subId}/cancel`,
          body: { effective_from: 'next_billing_period' },
        },
      ]);
    });

    it('409 for the same tier and without a recoverable subscription; 400 for an unknown tier', async () => {
      const { user } = await subscribed('PRO');
      expect((await post(user, 'subscription/change', { target_tier: 'PRO' })).body).toMatchObject({
        status: 409,
        code: 'same_tier',
      });
      const free = await createUser(api.prisma);
      expect((await post(free, 'subscription/change', { target_tier: 'FREE' })).body).toMatchObject({
        status: 409,
        code: 'same_tier',
      });
      expect((await post(free, 'subscription/change', { target_tier: 'TEAM' })).body).toMatchObject({
        status: 409,
        code: 'no_recoverable_subscription',
      });
      expect((await post(free, 'subscription/change', { target_tier: 'GOLD' })).status).toBe(400);
      expect(
        (await post(free, 'subscription/change', { target_tier: 'TEAM', current_tier: 'TEAM' })).status,
      ).toBe(400);
      expect(billing.requests).toHaveLength(0);
    });

    it('refuses to change a paused or past_due subscription with a code that names the next step', async () => {
      const paused = await subscribed('PRO', 'paused');
      const pastDue = await subscribed('PRO', 'past_due');
      for (const target of ['TEAM', 'FREE']) {
        expect((await post(paused.user, 'subscription/change', { target_tier: target })).body).toMatchObject({
          status: 409,
          code: 'subscription_paused',
        });
        expect((await post(pastDue.user, 'subscription/change', { target_tier: target })).body).toMatchObject(
          {
            status: 409,
            code: 'subscription_past_due',
          },
        );
      }
      expect(requestsOfActions()).toHaveLength(0);
    });
  });

  describe('resume', () => {
    it('resumes a paused subscription and refuses otherwise', async () => {
      const { user, subId } = await subscribed('PRO', 'paused');
      const res = await post(user, 'subscription/resume', {});
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ action: 'resume', provider_status: 'active' });
      expect(billing.requests).toMatchObject([
        { method: 'POST', path: `/subscriptions/${subId}/resume`, body: { effective_from: 'immediately' } },
      ]);
      const active = await subscribed('PRO');
      expect((await post(active.user, 'subscription/resume')).body).toMatchObject({
        status: 409,
        code: 'not_paused',
      });
    });
  });

  describe('provider failures', () => {
    it('retries 503s and succeeds on the third attempt', async () => {
      const { user } = await subscribed('PRO');
      billing.failNext(503, 2);
      const res = await post(user, 'subscription/cancel', {});
      expect(res.status).toBe(200);
      expect(billing.requests).toHaveLength(3);
    });

    it('honours 429 with Retry-After', async () => {
      const { user } = await subscribed('PRO');
      billing.failNext(429, 1, { 'Retry-After': '0' });
      expect((await post(user, 'subscription/cancel', {})).status).toBe(200);
      expect(billing.requests).toHaveLength(2);
    });

    it('gives up after 3 attempts with a 503 problem, audited as failed', async () => {
      const { user } = await subscribed('PRO');
      billing.failNext(503, Infinity);
      const res = await post(user, 'subscription/cancel', {});
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'billing_unavailable' });
      expect(billing.requests).toHaveLength(3);
      const [audit] = await auditsOf(user, 'billing.cancel_requested');
      expect(audit.details).toMatchObject({ status: 'failed', error: 'billing_unavailable' });
    });

    it('maps a refusal to 502 without retrying, and an off-contract answer to 502', async () => {
      const { user } = await subscribed('PRO');
      billing.failNext(400, 1);
      const refused = await post(user, 'subscription/change', { target_tier: 'TEAM' });
      expect(refused.status).toBe(502);
      expect(refused.body).toMatchObject({ code: 'billing_rejected' });
      expect(billing.requests).toHaveLength(1);
      billing.reset();
      billing.failNext(200, 1, {}, JSON.stringify({ data: { id: 42 } }));
      const invalid = await post(user, 'subscription/change', { target_tier: 'TEAM' });
      expect(invalid.status).toBe(502);
      expect(invalid.body).toMatchObject({ code: 'upstream_invalid_response' });
    });
  });

  describe('audit of an accepted request', () => {
    it('answers 200 when the provider accepted but the audit insert fails, and logs the entry loudly', async () => {
      const { user, subId } = await subscribed('PRO');
      await api.prisma.$executeRawUnsafe(`
        CREATE FUNCTION fail_accepted_audit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'injected audit failure'; END $$`);
      await api.prisma.$executeRawUnsafe(`
        CREATE TRIGGER fail_accepted_audit BEFORE INSERT ON audit_logs FOR EACH ROW
        WHEN (NEW.action = 'billing.cancel_requested' AND NEW.details->>'status' = 'accepted'
              AND NEW.user_id = '${user.identityUserId}')
        EXECUTE FUNCTION fail_accepted_audit()`);
      try {
        const res = await post(user, 'subscription/cancel', {});
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ action: 'cancel', effective_from: 'next_billing_period' });
      } finally {
        await api.prisma.$executeRawUnsafe('DROP TRIGGER fail_accepted_audit ON audit_logs');
        await api.prisma.$executeRawUnsafe('DROP FUNCTION fail_accepted_audit()');
      }
      expect(billing.requests).toHaveLength(1);
      expect(await auditsOf(user, 'billing.cancel_requested')).toHaveLength(0);
      const logged = env.logs.lines.find(
        (line) => line.includes('its audit entry could not be written') && line.includes(subId),
      );
      expect(logged).toBeDefined();
      expect(JSON.parse(logged!)).toMatchObject({
        level: 50,
        audit: {
          action: 'billing.cancel_requested',
          details: { status: 'accepted', subscription_id: subId },
        },
      });
    });
  });

  describe('account deletion hook', () => {
    it('cancels live subscriptions at the provider immediately, idempotently', async () => {
      const { user, subId } = await subscribed('PRO');
      const hooks = worker.get(UserHooks);
      expect(hooks.names('deletion_requested')).toContain('cancel-subscription');
      await hooks.run('deletion_requested', user);
      expect(billing.requests).toMatchObject([
        { method: 'POST', path: `/subscriptions/${subId}/cancel`, body: { effective_from: 'immediately' } },
      ]);
      expect(billing.subscriptions.get(subId)?.status).toBe('canceled');
      // A retried job before the webhook arrived: the provider refuses, reads back canceled, done.
      await hooks.run('deletion_requested', user);
      expect(billing.requests.map((r) => r.method)).toEqual(['POST', 'POST', 'GET']);
      const audits = await api.prisma.auditLog.findMany({
        where: { action: 'billing.cancel_requested', userId: user.identityUserId },
      });
      expect(audits).toHaveLength(2);
      expect(audits[0]).toMatchObject({ actor: 'system:account-deletion' });
      expect(audits[0].details).toMatchObject({ reason: 'account_deletion', status: 'accepted' });
    });

    it('fails the hook (so the job retries) while the provider is down, as an outage the relay runs again', async () => {
      const { user } = await subscribed('PRO');
      billing.failNext(503, Infinity);
      const failure = await worker
        .get(UserHooks)
        .run('deletion_requested', user)
        .then(
          () => null,
          (err: unknown) => err,
        );
      expect((failure as Error).message).toMatch(/cancel-subscription/);
      // The job's failure is recorded as an outage's, so the outbox relay pushes it again (faults.md).
      expect(isOutageFailure(failure)).toBe(true);
      expect(billing.requests).toHaveLength(3);
    });
  });
});
