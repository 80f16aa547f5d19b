import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createUser } from '../factories/user.factory.js';
import type { User } from '../../src/generated/prisma/client.js';
import { CheckoutTokenService } from '../../src/modules/billing/actions/checkout-token.service.js';
import { fixture } from '../contracts/contract-support.js';
import type { FakeBillingApi } from '../fakes/billing-api.js';
import {
  billingApiWorld,
  checkoutToken,
  DAY,
  deliver,
  newSubId,
  subscriptionEvent,
} from '../support/billing.js';
import type { ApiApp, TestEnv } from '../support/test-env.js';

/**
 * Annual plans. Spec operation table: "change, target_tier = any other paid tier: provider price update,
 * proration mode prorated_next_billing_period; access at the current tier until current_period_end, then
 * the new price". The new price is the target tier's price for the subscription's billing cycle: a yearly
 * subscriber who changes tier stays yearly (the defect: they were moved to the tier's first, monthly, price).
 */
const PRICES = { PRO: 'pri_pro', TEAM: 'pri_team', PRO_Y: 'pri_pro_y', TEAM_Y: 'pri_team_y' } as const;

/** The yearly billing cycle of Paddle's published annual plan (`Annual plan`, subscription.trialing mock). */
type Published = { data: { items: { price: { billing_cycle: { interval: string; frequency: number } } }[] } };
const YEARLY = fixture<Published>('paddle', 'node-sdk.subscription-trialing').data.items[0].price
  .billing_cycle;
const MONTHLY = fixture<Published>('paddle', 'node-sdk.subscription-created').data.items[0].price
  .billing_cycle;

describe('billing: the billing cycle of checkouts and tier changes', () => {
  let env: TestEnv;
  let api: ApiApp;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    ({ env, api, billing } = await billingApiWorld({
      BILLING_PRICE_TIERS: `${PRICES.PRO}:PRO:month,${PRICES.TEAM}:TEAM:month,${PRICES.PRO_Y}:PRO:year,${PRICES.TEAM_Y}:TEAM:year`,
    }));
  });
  afterAll(() => env.close());
  beforeEach(() => billing.reset());

  it('uses the published cycles of a yearly and a monthly Paddle price', () => {
    expect(YEARLY).toEqual({ interval: 'year', frequency: 1 });
    expect(MONTHLY).toEqual({ interval: 'month', frequency: 1 });
  });

  const post = async (user: User, path: string, body: object) =>
    api.http
      .post(`/api/v1/billing/${path}`)
      .set('Authorization', await api.bearer(user.identityUserId))
      .send(body);
  const changeAudits = (user: User) =>
    api.prisma.auditLog.findMany({
      where: { action: 'billing.change_requested', userId: user.identityUserId },
    });

  /** A PRO subscription on `priceId`, billed every `cycle`, as the provider's subscription.created says. */
  async function subscribed(priceId: string, cycle: { interval: string; frequency: number }) {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const start = new Date(Date.now() - 10 * DAY);
    billing.seed(subId, 'active', priceId);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId,
      billingCycle: cycle,
      token: checkoutToken(api, user, 'PRO'),
      occurredAt: start,
      periodStart: start,
      periodEnd: new Date(start.getTime() + (cycle.interval === 'year' ? 365 : 30) * DAY),
    });
    expect((await deliver(api, created)).outcome).toBe('processed');
    const row = await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
    expect(row).toMatchObject({ tier: 'PRO', priceId, billingInterval: cycle.interval, billingFrequency: 1 });
    return { user, subId, row };
  }

  const priceUpdate = (subId: string, priceId: string) => ({
    method: 'PATCH',
    path: `/subscriptions/${subId}`,
    authorization: 'Bearer pdl_test_key',
    body: {
      items: [{ price_id: priceId, quantity: 1 }],
      proration_billing_mode: 'prorated_next_billing_period',
    },
  });

  /** Runs `fn` with TEAM's yearly price taken out of the configuration (as if it were never configured). */
  async function withoutYearlyTeam<T>(fn: () => Promise<T>): Promise<T> {
    const project = api.config.project;
    const cycles = project.priceCycles!;
    delete project.priceTiers[PRICES.TEAM_Y];
    delete cycles[PRICES.TEAM_Y];
    try {
      return await fn();
    } finally {
      project.priceTiers[PRICES.TEAM_Y] = 'TEAM';
      cycles[PRICES.TEAM_Y] = 'year';
    }
  }

  describe('change', () => {
    it('moves a yearly PRO subscription to the yearly TEAM price', async () => {
      const { user, subId } = await subscribed(PRICES.PRO_Y, YEARLY);
      const res = await post(user, 'subscription/change', { target_tier: 'TEAM' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ action: 'change', target_tier: 'TEAM' });
      expect(billing.requests).toEqual([priceUpdate(subId, PRICES.TEAM_Y)]);
      const [audit] = await changeAudits(user);
      expect(audit.details).toMatchObject({
        tier: 'PRO',
        target_tier: 'TEAM',
        price_id: PRICES.TEAM_Y,
        billing_cycle: 'year',
        status: 'accepted',
      });
    });

    it('moves a monthly PRO subscription to the monthly TEAM price, as before', async () => {
      const { user, subId } = await subscribed(PRICES.PRO, MONTHLY);
      expect((await post(user, 'subscription/change', { target_tier: 'TEAM' })).status).toBe(200);
      expect(billing.requests).toEqual([priceUpdate(subId, PRICES.TEAM)]);
    });

    it('takes the cycle of the configured price when the stored subscription has none', async () => {
      const { user, subId, row } = await subscribed(PRICES.PRO_Y, YEARLY);
      await api.prisma.subscription.update({
        where: { id: row.id },
        data: { billingInterval: null, billingFrequency: null },
      });
      expect((await post(user, 'subscription/change', { target_tier: 'TEAM' })).status).toBe(200);
      expect(billing.requests).toEqual([priceUpdate(subId, PRICES.TEAM_Y)]);
    });

    it('refuses with 409 no_price_for_cycle, calling nothing, when the target tier has no price for the cycle', async () => {
      const { user, row } = await subscribed(PRICES.PRO_Y, YEARLY);
      const res = await withoutYearlyTeam(() => post(user, 'subscription/change', { target_tier: 'TEAM' }));
      expect(res.status).toBe(409);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 409, code: 'no_price_for_cycle' });
      expect(res.body.detail).toContain('TEAM');
      expect(res.body.detail).toContain('yearly');
      expect(billing.requests).toEqual([]);
      expect(await changeAudits(user)).toEqual([]);
      expect(await api.prisma.subscription.findUniqueOrThrow({ where: { id: row.id } })).toEqual(row);
      expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('PRO');
      // Back to FREE (a cancel at period end) needs no price and stays possible.
      expect((await post(user, 'subscription/change', { target_tier: 'FREE' })).status).toBe(200);
    });

    it('refuses when no cycle is configured and the target tier has several prices (which one is yearly is unknown)', async () => {
      // BILLING_PRICE_TIERS=pri_pro:PRO,pri_team:TEAM,pri_pro_y:PRO,pri_team_y:TEAM: the acceptance run's set-up.
      const { user } = await subscribed(PRICES.PRO_Y, YEARLY);
      const project = api.config.project;
      const cycles = project.priceCycles;
      project.priceCycles = {};
      try {
        const res = await post(user, 'subscription/change', { target_tier: 'TEAM' });
        expect(res.body).toMatchObject({ status: 409, code: 'no_price_for_cycle' });
      } finally {
        project.priceCycles = cycles;
      }
      expect(billing.requests).toEqual([]);
      expect(await changeAudits(user)).toEqual([]);
    });

    it('never takes an unconfigured single price for a yearly subscription (prices were monthly before cycles)', async () => {
      // BILLING_PRICE_TIERS=pri_pro:PRO,pri_pro_y:PRO,pri_team:TEAM: TEAM's one price names no cycle.
      const { user } = await subscribed(PRICES.PRO_Y, YEARLY);
      const project = api.config.project;
      const cycles = project.priceCycles;
      project.priceCycles = {};
      delete project.priceTiers[PRICES.TEAM_Y];
      try {
        const res = await post(user, 'subscription/change', { target_tier: 'TEAM' });
        expect(res.body).toMatchObject({ status: 409, code: 'no_price_for_cycle' });
        expect(res.body.detail).toContain('not configured (BILLING_PRICE_TIERS price:TIER:month|year)');
        expect(billing.requests).toEqual([]);
        // A monthly subscriber still moves to that price, as before cycles existed.
        const monthly = await subscribed(PRICES.PRO, MONTHLY);
        expect((await post(monthly.user, 'subscription/change', { target_tier: 'TEAM' })).status).toBe(200);
        expect(billing.requests).toEqual([priceUpdate(monthly.subId, PRICES.TEAM)]);
      } finally {
        project.priceCycles = cycles;
        project.priceTiers[PRICES.TEAM_Y] = 'TEAM';
      }
      expect(await changeAudits(user)).toEqual([]);
    });
  });

  describe('checkout', () => {
    it('sells the price of the requested billing cycle, the monthly one by default', async () => {
      const user = await createUser(api.prisma);
      const yearly = await post(user, 'checkout', { tier: 'TEAM', billing_cycle: 'year' });
      expect(yearly.status).toBe(200);
      expect(yearly.body).toMatchObject({ price_id: PRICES.TEAM_Y, customer_email: user.email });
      expect(api.app.get(CheckoutTokenService).verify(yearly.body.custom_data.checkout_token)).toMatchObject({
        ok: true,
        claims: { tier: 'TEAM', userId: user.id },
      });
      expect((await post(user, 'checkout', { tier: 'TEAM', billing_cycle: 'month' })).body.price_id).toBe(
        PRICES.TEAM,
      );
      expect((await post(user, 'checkout', { tier: 'TEAM' })).body.price_id).toBe(PRICES.TEAM);

      const token = await post(user, 'checkout-token', { tier: 'PRO', billing_cycle: 'year' });
      expect(token.status).toBe(200);
      expect(token.body).toMatchObject({ price_id: PRICES.PRO_Y, token: expect.any(String) });
      expect((await post(user, 'checkout-token', { tier: 'PRO' })).body.price_id).toBe(PRICES.PRO);
    });

    it('answers 400 for an unknown cycle and for a cycle the tier has no price for', async () => {
      const user = await createUser(api.prisma);
      for (const path of ['checkout', 'checkout-token']) {
        for (const billing_cycle of ['week', 'yearly', '', 12, null]) {
          const res = await post(user, path, { tier: 'PRO', billing_cycle });
          expect(res.status).toBe(400);
          expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
          expect(res.body).toMatchObject({ code: 'validation_failed' });
        }
        const res = await withoutYearlyTeam(() => post(user, path, { tier: 'TEAM', billing_cycle: 'year' }));
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({
          code: 'validation_failed',
          errors: [{ field: 'billing_cycle', message: 'billing_cycle of TEAM must be one of month' }],
        });
      }
      expect(await api.prisma.subscription.count({ where: { userId: user.id } })).toBe(0);
    });

    it('documents billing_cycle in the OpenAPI document', async () => {
      const res = await api.http.get('/docs/openapi.json');
      expect(res.body.components.schemas.CheckoutRequestDto.properties.billing_cycle).toMatchObject({
        enum: ['month', 'year'],
      });
      expect(res.body.components.schemas.CheckoutRequestDto.required).toEqual(['tier']);
    });
  });
});
