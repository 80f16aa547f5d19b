import { createUser } from '../factories/user.factory.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InsufficientCreditsError } from '../../src/common/errors/app-error.js';
import type { User } from '../../src/generated/prisma/client.js';
import { addMonths } from '../../src/modules/billing/jobs/allowance-months.js';
import { AllowanceService } from '../../src/modules/billing/jobs/allowance.service.js';
import { CheckoutTokenService } from '../../src/modules/billing/actions/checkout-token.service.js';
import { UnitOfWork } from '../../src/infra/prisma/unit-of-work.js';
import { CreditsService } from '../../src/modules/credits/credits.service.js';
import { MeteredCreditsService } from '../../src/modules/credits/metered-credits.service.js';
import {
  adjustmentEvent,
  checkoutToken,
  deliver,
  newEventId,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';
import { signedToken } from '../support/tokens.js';
import { waitFor } from '../support/wait.js';

// Issue 18 (credit lifecycle), end to end: signed Paddle-shaped events through the receiver and a real
// worker, the allowance job with a simulated clock, real PostgreSQL. PRO expires unspent plan credits at
// each new allowance (none), TEAM keeps at most 2000 (cap), packs are pri_pack_s (500) and pri_pack_l (3000).

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'contracts', 'fixtures', 'paddle');
const PACK_S = 'pri_pack_s';
const PACK_L = 'pri_pack_l';

describe('credit lifecycle (issue 18)', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;

  beforeAll(async () => {
    env = await TestEnv.create({
      env: { CREDIT_ROLLOVER: 'PRO:none,TEAM:cap:2000', LOW_BALANCE_PERCENT: '10' },
    });
    api = await env.startApi();
    worker = await env.startWorker();
  });
  afterEach(async () => {
    await expectLedgerConsistent(api.prisma, { allowNegative: true });
  });
  afterAll(async () => {
    await env.close();
  });

  const user = (id: string) => api.prisma.user.findUniqueOrThrow({ where: { id } });
  const rows = (userId: string, kind?: string) =>
    api.prisma.creditTransaction.findMany({
      where: { userId, ...(kind ? { kind } : {}) },
      orderBy: [{ createdAt: 'asc' }, { jobId: 'asc' }],
    });
  const spend = (userId: string, amount: number) =>
    api.app.get(MeteredCreditsService).reserve({ userId, amount, jobId: `spend-${randomUUID()}` });
  const credits = async (u: User) =>
    (await api.http.get('/api/v1/credits').set('Authorization', await api.bearer(u.identityUserId))).body;

  /** A subscription started through a signed checkout token, as a real checkout would. */
  async function subscribed(tier: 'PRO' | 'TEAM', options: { annual?: boolean; start?: Date } = {}) {
    const u = await createUser(api.prisma);
    const subId = newSubId();
    const start = options.start ?? new Date(Date.now() - 86_400_000);
    const event = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: PRICE[tier],
      token: checkoutToken(api, u, tier),
      occurredAt: start,
      periodStart: start,
      periodEnd: options.annual ? addMonths(start, 12) : addMonths(start, 1),
    });
    if (options.annual) {
      const cycle = { interval: 'year', frequency: 1 };
      event.data.billing_cycle = cycle;
      event.data.items[0].price.billing_cycle = cycle;
    }
    expect((await deliver(api, event)).outcome).toBe('processed');
    return { user: u, subId };
  }

  /** An event of an annual PRO subscription in the period starting `periodStart`, with this status. */
  const annualEvent =
    (subId: string, periodStart: Date) => (type: string, status: 'active' | 'past_due', at: Date) =>
      subscriptionEvent({
        type,
        subId,
        status,
        priceId: PRICE.PRO,
        occurredAt: at,
        periodStart,
        periodEnd: addMonths(periodStart, 12),
        billingCycle: { interval: 'year', frequency: 1 },
      });

  async function packCheckout(u: User, priceId: string) {
    return api.http
      .post('/api/v1/billing/credit-packs/checkout')
      .set('Authorization', await api.bearer(u.identityUserId))
      .send({ price_id: priceId });
  }

  describe('annual plans', () => {
    it('grant 12 monthly allowances over a simulated year, each exactly once under concurrent job runs', async () => {
      const start = new Date('2026-01-31T09:00:00.000Z');
      const { user: u, subId } = await subscribed('PRO', { annual: true, start });
      const jobs = [api.app.get(AllowanceService), worker.get(AllowanceService)];
      // Hourly ticks around each anniversary (one before, two after), each run by 4 job runs at once.
      for (let month = 1; month <= 13; month += 1) {
        const anniversary = addMonths(start, month);
        for (const offset of [-3_600_000, 0, 3_600_000]) {
          const clock = new Date(anniversary.getTime() + offset);
          await Promise.all([0, 1, 2, 3].map((i) => jobs[i % 2].run(clock)));
        }
        const granted = (await rows(u.id, 'grant')).length;
        expect({ month, granted }).toEqual({ month, granted: Math.min(month + 1, 12) });
      }
      const grants = await rows(u.id, 'grant');
      expect(grants.map((g) => g.jobId)).toEqual([
        `first-period:${subId}`,
        ...Array.from({ length: 11 }, (_, i) => `allowance:${subId}:${start.toISOString()}:${i + 1}`),
      ]);
      expect(grants.every((g) => g.delta === 1000)).toBe(true);
      // Feb 28: month 1 of a period that starts on Jan 31 falls on the month's last day.
      expect((grants[1].details as { month: number }).month).toBe(1);
      // PRO rolls nothing over: each allowance closed the previous one and its 1000 unspent credits expired.
      const expiries = await rows(u.id, 'expiry');
      expect(expiries.map((e) => [e.jobId, e.delta])).toEqual(
        grants.slice(0, 11).map((g) => [g.jobId, -1000]),
      );
      expect(await user(u.id)).toMatchObject({ creditBalance: 1000, purchasedCredits: 0 });
      expect(await credits(u)).toMatchObject({
        balance: 1000,
        plan_remaining: 1000,
        purchased_remaining: 0,
        plan_expires_at: addMonths(start, 12).toISOString(),
      });
    });

    it('grant nothing of an unpaid (past due) renewal period, and every month due once it is paid', async () => {
      const day = 86_400_000;
      const start = new Date(Date.now() - 405 * day);
      const { user: u, subId } = await subscribed('PRO', { annual: true, start });
      const renewalStart = addMonths(start, 12);
      const renewed = annualEvent(subId, renewalStart);
      // The annual renewal's payment failed: the new period is open but unpaid for over a month.
      const pastDue = renewed('subscription.past_due', 'past_due', renewalStart);
      expect((await deliver(api, pastDue)).outcome).toBe('processed');
      const job = api.app.get(AllowanceService);
      await job.run(new Date());
      const renewalGrants = async () =>
        (await rows(u.id, 'grant'))
          .map((g) => g.jobId)
          .filter((id) => id.startsWith(`allowance:${subId}:${renewalStart.toISOString()}`));
      expect(await renewalGrants()).toEqual([]);

      // Paid at last (credits.md: "a past-due renewal grants once it is paid"): the renewal grants month 0
      // and the next run every month of the period that has come.
      const paidAt = new Date(Date.now() - day);
      const payment = transactionEvent({ subId, priceId: PRICE.PRO, total: '15000', occurredAt: paidAt });
      expect((await deliver(api, payment)).outcome).toBe('processed');
      expect((await deliver(api, renewed('subscription.updated', 'active', paidAt))).outcome).toBe(
        'processed',
      );
      await job.run(new Date());
      expect(await renewalGrants()).toEqual([`allowance:${subId}:${renewalStart.toISOString()}:1`]);
      expect((await rows(u.id, 'grant')).map((g) => g.jobId)).toContain(payment.data.id);
      // Paid after month 1 had begun: month 0 (the renewal's grant) was never spendable in its own month, so
      // the catch-up of month 1 does not expire it (decision "a past-due period grants once it is paid").
      expect((await rows(u.id, 'expiry')).map((e) => e.jobId)).not.toContain(payment.data.id);
    });

    it('grant the months of a paid period on time while it is past due for another payment', async () => {
      // Review repro: a PAID annual period goes past_due (a failed one-off charge) between months 2 and 4;
      // skipping it then catching up in one run expired each caught-up month at once under `none`.
      const day = 86_400_000;
      const start = new Date(Date.now() - 200 * day);
      const { user: u, subId } = await subscribed('PRO', { annual: true, start });
      const ev = annualEvent(subId, start);
      const paid = transactionEvent({ subId, origin: 'web', total: '18000', occurredAt: start });
      expect((await deliver(api, paid)).outcome).toBe('processed');
      const job = api.app.get(AllowanceService);
      const at = (month: number) => new Date(addMonths(start, month).getTime() + 3_600_000);
      await job.run(at(1));
      await job.run(at(2));
      expect(
        (await deliver(api, ev('subscription.past_due', 'past_due', new Date(at(2).getTime() + day))))
          .outcome,
      ).toBe('processed');
      const month = (m: number) => `allowance:${subId}:${start.toISOString()}:${m}`;
      await job.run(at(3));
      expect((await rows(u.id, 'grant')).map((g) => g.jobId)).toContain(month(3));
      await job.run(at(4));
      expect(
        (await deliver(api, ev('subscription.updated', 'active', new Date(at(4).getTime() + day)))).outcome,
      ).toBe('processed');
      await job.run(new Date(at(4).getTime() + 2 * day));
      // Months 3 and 4 came on their anniversaries; each closed only the month before it, in its turn.
      expect((await rows(u.id, 'grant')).map((g) => g.jobId)).toEqual(
        expect.arrayContaining([month(1), month(2), month(3), month(4)]),
      );
      expect((await rows(u.id, 'expiry')).map((e) => e.jobId)).not.toContain(month(4));
      expect((await rows(u.id, 'expiry')).map((e) => e.jobId)).toContain(month(3));
      expect(await user(u.id)).toMatchObject({ creditBalance: 1000 });
    });

    it('keep every month caught up at once after a long unpaid spell until the next month closes them', async () => {
      const day = 86_400_000;
      const start = new Date(Date.now() - 500 * day);
      const { user: u, subId } = await subscribed('PRO', { annual: true, start });
      const renewalStart = addMonths(start, 12);
      const renewed = annualEvent(subId, renewalStart);
      expect((await deliver(api, renewed('subscription.past_due', 'past_due', renewalStart))).outcome).toBe(
        'processed',
      );
      const job = api.app.get(AllowanceService);
      const at = (month: number) => new Date(addMonths(renewalStart, month).getTime() + 3_600_000);
      await job.run(at(1));
      await job.run(at(2));
      await job.run(at(3));
      // Paid at last in month 3: month 0 with the payment, months 1..3 in the next run.
      const paidAt = new Date(addMonths(renewalStart, 3).getTime() + 10 * day);
      const payment = transactionEvent({ subId, priceId: PRICE.PRO, total: '15000', occurredAt: paidAt });
      // Paddle's transaction names the period it pays (its month 0 starts with the period, not the payment).
      Object.assign(payment.data, {
        billing_period: {
          starts_at: renewalStart.toISOString(),
          ends_at: addMonths(start, 24).toISOString(),
        },
      });
      expect((await deliver(api, payment)).outcome).toBe('processed');
      expect((await deliver(api, renewed('subscription.updated', 'active', paidAt))).outcome).toBe(
        'processed',
      );
      const before = (await user(u.id)).creditBalance;
      await job.run(new Date(paidAt.getTime() + 3_600_000));
      const month = (m: number) => `allowance:${subId}:${renewalStart.toISOString()}:${m}`;
      const expired = async () => (await rows(u.id, 'expiry')).map((e) => e.jobId);
      expect(await expired()).not.toEqual(expect.arrayContaining([payment.data.id]));
      for (const m of [1, 2]) expect(await expired()).not.toContain(month(m));
      // Four months' credits, spendable until month 4 closes the last of them (rule `none`).
      expect((await user(u.id)).creditBalance).toBe(before + 3000);
      expect((await user(u.id)).planExpiresAt?.toISOString()).toBe(addMonths(renewalStart, 4).toISOString());
      await job.run(at(4));
      expect(await expired()).toContain(month(3));
      expect((await user(u.id)).creditBalance).toBe(1000);
    });

    it('give a monthly plan nothing from the job, and the renewal grants the next month 0', async () => {
      const { user: u, subId } = await subscribed('TEAM');
      await api.app.get(AllowanceService).run(new Date(Date.now() + 20 * 86_400_000));
      expect((await rows(u.id, 'grant')).map((g) => g.jobId)).toEqual([`first-period:${subId}`]);
      const renewal = transactionEvent({ subId, priceId: PRICE.TEAM, total: '5000' });
      expect((await deliver(api, renewal)).outcome).toBe('processed');
      expect((await rows(u.id, 'grant')).map((g) => g.jobId)).toEqual([
        `first-period:${subId}`,
        renewal.data.id,
      ]);
    });
  });

  describe('top-up packs', () => {
    it('lists the configured packs and sells one to a FREE user through a token naming pack and buyer', async () => {
      const buyer = await createUser(api.prisma);
      const list = await api.http
        .get('/api/v1/billing/credit-packs')
        .set('Authorization', await api.bearer(buyer.identityUserId));
      expect(list.status).toBe(200);
      expect(list.body).toEqual({
        items: [
          { price_id: PACK_S, credits: 500 },
          { price_id: PACK_L, credits: 3000 },
        ],
      });
      const unknown = await packCheckout(buyer, PRICE.PRO);
      expect(unknown.status).toBe(400);
      expect(unknown.body.code).toBe('unknown_credit_pack');

      const checkout = await packCheckout(buyer, PACK_S);
      expect(checkout.status).toBe(200);
      expect(checkout.body).toMatchObject({
        price_id: PACK_S,
        customer_email: buyer.email,
        custom_data: { checkout_token: expect.any(String) },
      });
      const claims = api.app.get(CheckoutTokenService).verify(checkout.body.custom_data.checkout_token);
      expect(claims).toMatchObject({ ok: true, claims: { userId: buyer.id, tier: `pack:${PACK_S}` } });

      const txnId = `txn_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
      const paid = (eventId?: string) =>
        transactionEvent({
          txnId,
          subId: null,
          origin: 'web',
          priceId: PACK_S,
          total: '1000',
          customerId: `ctm_${buyer.id.slice(0, 8)}`,
          token: checkout.body.custom_data.checkout_token,
          eventId,
        });
      // The same event delivered five times at once, and replays of the transaction under new event ids.
      const first = paid();
      const outcomes = await Promise.all([
        ...Array.from({ length: 5 }, () => deliver(api, first)),
        ...Array.from({ length: 5 }, () => deliver(api, paid(newEventId()))),
      ]);
      expect(outcomes.every((res) => res.status === 200)).toBe(true);
      const purchases = await rows(buyer.id, 'purchase');
      expect(purchases.map((p) => [p.jobId, p.delta])).toEqual([[txnId, 500]]);
      expect(await user(buyer.id)).toMatchObject({
        currentTier: 'FREE',
        creditBalance: 500,
        purchasedCredits: 500,
      });
      expect(await credits(buyer)).toMatchObject({
        balance: 500,
        plan_remaining: 0,
        purchased_remaining: 500,
        plan_expires_at: null,
      });
      const exported = await api.http
        .get('/api/v1/account/me/export')
        .set('Authorization', await api.bearer(buyer.identityUserId));
      expect(JSON.parse(exported.text).credits).toEqual({
        balance: 500,
        plan_remaining: 0,
        purchased_remaining: 500,
        plan_expires_at: null,
      });
    });

    it('grants nothing for a forged token, another pack or a subscription token, or a foreign customer', async () => {
      const victim = await createUser(api.prisma);
      const good = (await packCheckout(victim, PACK_S)).body.custom_data.checkout_token as string;
      const [body, signature] = good.split('.');
      const forgedBody = Buffer.from(
        JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), t: `pack:${PACK_L}` }),
      ).toString('base64url');
      const other = await createUser(api.prisma);
      // `other` is a customer of ours already: a token of `victim` in `other`'s transaction is foreign.
      await api.prisma.user.update({
        where: { id: other.id },
        data: { billingCustomerId: 'ctm_other_customer' },
      });
      const cases: [string, string, string | null][] = [
        ['forged signature', PACK_S, `${body}.${signature.slice(0, -4)}AAAA`],
        ['tampered claims', PACK_L, `${forgedBody}.${signature}`],
        ['another pack', PACK_L, good],
        ['a subscription token', PACK_S, checkoutToken(api, victim, 'PRO')],
        ['no token', PACK_S, null],
      ];
      for (const [name, priceId, token] of cases) {
        const res = await deliver(
          api,
          transactionEvent({ subId: null, origin: 'web', priceId, token, customerId: null }),
        );
        expect({ name, outcome: res.outcome }).toEqual({ name, outcome: 'skipped' });
      }
      const foreign = await deliver(
        api,
        transactionEvent({
          subId: null,
          origin: 'web',
          priceId: PACK_S,
          token: good,
          customerId: 'ctm_other_customer',
        }),
      );
      expect(foreign.outcome).toBe('skipped');
      expect(await rows(victim.id)).toEqual([]);
      expect(await rows(other.id)).toEqual([]);
      const audits = await api.prisma.auditLog.findMany({
        where: { action: 'transaction.completed', details: { path: ['kind'], equals: 'purchase' } },
      });
      const reasons = audits.map((a) => (a.details as { reason?: string }).reason).filter(Boolean);
      expect(reasons).toEqual(
        expect.arrayContaining([
          'checkout_token_bad_signature',
          'checkout_token_other_purchase',
          'pack_without_checkout_token',
          'checkout_token_foreign_customer',
        ]),
      );
    });

    it('skips a pack paid with an authentic checkout token whose claims are malformed, without retrying', async () => {
      const buyer = await createUser(api.prisma);
      const good = (await packCheckout(buyer, PACK_S)).body.custom_data.checkout_token as string;
      const claims = JSON.parse(Buffer.from(good.split('.')[0], 'base64url').toString());
      for (const bad of [
        { ...claims, u: 'not-a-uuid' },
        { ...claims, u: 'a\u0000' },
        { ...claims, u: '\ud800' },
        { ...claims, exp: 1e20 },
      ]) {
        const pack = transactionEvent({
          subId: null,
          origin: 'web',
          priceId: PACK_S,
          token: signedToken(bad, TEST_SECRETS.BILLING_WEBHOOK_SECRET),
          customerId: null,
        });
        const res = await deliver(api, pack);
        expect({ bad, status: res.status, outcome: res.outcome }).toEqual({
          bad,
          status: 200,
          outcome: 'skipped',
        });
        const row = await api.prisma.webhookEvent.findUniqueOrThrow({
          where: { provider_eventId: { provider: 'billing', eventId: pack.event_id } },
        });
        expect(row).toMatchObject({ status: 'SKIPPED', error: 'checkout_token_malformed', attempts: 1 });
        const [audit] = await api.prisma.auditLog.findMany({
          where: {
            action: 'transaction.completed',
            details: { path: ['transaction_id'], equals: pack.data.id },
          },
        });
        expect(audit?.details).toMatchObject({ reason: 'checkout_token_malformed' });
      }
      expect(await rows(buyer.id)).toEqual([]);
    });
  });

  describe('rollover', () => {
    /**
     * A plan user with a pack spends, then the renewal races with 20 spends of 10. Whatever the order, the
     * expiry removes exactly the old plan credits the rule says (all of them, or what exceeds the cap) as
     * they stood when the renewal ran: afterwards the purchased 500 are untouched and plan credits plus
     * the expiry add up to the same total.
     */
    async function race(tier: 'PRO' | 'TEAM', spentBefore: number) {
      const { user: u, subId } = await subscribed(tier);
      await spend(u.id, spentBefore);
      const token = (await packCheckout(u, PACK_S)).body.custom_data.checkout_token;
      const pack = transactionEvent({
        subId: null,
        origin: 'web',
        priceId: PACK_S,
        total: '1000',
        token,
        customerId: null,
      });
      expect((await deliver(api, pack)).outcome).toBe('processed');
      expect(await credits(u)).toMatchObject({ purchased_remaining: 500 });

      const renewal = transactionEvent({ subId, priceId: PRICE[tier], total: '1500' });
      const [delivered, ...spends] = await Promise.all([
        deliver(api, renewal),
        ...Array.from({ length: 20 }, () => spend(u.id, 10)),
      ]);
      expect(delivered.outcome).toBe('processed');
      expect(spends.every((s) => s.applied)).toBe(true);
      const expiries = await rows(u.id, 'expiry');
      expect(expiries.map((e) => e.jobId)).toEqual([`first-period:${subId}`]);
      const after = await credits(u);
      expect(after.purchased_remaining).toBe(500);
      return { expired: -expiries[0].delta, plan: after.plan_remaining as number, body: after };
    }

    it('none: every unspent plan credit of the closed period expires, purchased credits stay', async () => {
      const { expired, plan, body } = await race('PRO', 300);
      // Old plan 700 - s1 expired; new plan 1000 - s2; s1 + s2 = 200.
      expect(plan + expired).toBe(1500);
      expect(expired).toBeGreaterThanOrEqual(500);
      expect(expired).toBeLessThanOrEqual(700);
      expect(body.plan_expires_at).not.toBeNull();
    });

    it('cap: what exceeds the cap expires', async () => {
      const { expired, plan } = await race('TEAM', 1000);
      // Old plan 4000 - s1, of which 2000 stay: expiry 2000 - s1; new plan 2000 + 5000 - s2.
      expect(plan + expired).toBe(8800);
      expect(expired).toBeGreaterThanOrEqual(1800);
      expect(expired).toBeLessThanOrEqual(2000);
    });

    it('spends plan credits before purchased ones, and a refunded reservation gives purchased credits back', async () => {
      const { user: u } = await subscribed('PRO');
      const token = (await packCheckout(u, PACK_S)).body.custom_data.checkout_token;
      await deliver(
        api,
        transactionEvent({ subId: null, origin: 'web', priceId: PACK_S, token, customerId: null }),
      );
      await spend(u.id, 900);
      expect(await credits(u)).toMatchObject({ balance: 600, plan_remaining: 100, purchased_remaining: 500 });
      const reservation = await spend(u.id, 300);
      expect(await credits(u)).toMatchObject({ balance: 300, plan_remaining: 0, purchased_remaining: 300 });
      await api.app.get(MeteredCreditsService).refund(reservation.spend.jobId, 'provider_failed');
      expect(await credits(u)).toMatchObject({ balance: 600, plan_remaining: 100, purchased_remaining: 500 });
      const settled = await spend(u.id, 300);
      await api.app.get(MeteredCreditsService).settle(settled.spend.jobId, 150);
      // 150 charged: 100 plan, 50 purchased; the other 150 go back to purchased.
      expect(await credits(u)).toMatchObject({ balance: 450, plan_remaining: 0, purchased_remaining: 450 });
    });
  });

  describe('plan_expires_at when the subscription will not renew', () => {
    const fixture = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'));
    const DAY = 86_400_000;

    /**
     * Paddle's own subscription.updated or subscription.canceled (paddle-node-sdk fixture) for our
     * subscription: its id, customer, price and period, and the scheduled change Paddle sets when a cancel
     * is requested for the end of the period (`effective_from: next_billing_period`).
     */
    function paddleSubscription(
      name: 'node-sdk.subscription-updated.json' | 'node-sdk.subscription-canceled.json',
      input: {
        subId: string;
        priceId: string;
        period: { starts_at: string; ends_at: string } | null;
        scheduledChange?: { action: string; effective_at: string; resume_at: string | null };
      },
    ) {
      const event = fixture(name);
      event.event_id = newEventId();
      event.occurred_at = new Date().toISOString();
      Object.assign(event.data, {
        id: input.subId,
        customer_id: `ctm_${input.subId}`,
        current_billing_period: input.period,
        scheduled_change: input.scheduledChange ?? null,
        custom_data: null,
      });
      event.data.items[0].price.id = input.priceId;
      if (event.data.status === 'canceled') event.data.canceled_at = event.occurred_at;
      return event;
    }
    const exported = async (u: User) => {
      const res = await api.http
        .get('/api/v1/account/me/export')
        .set('Authorization', await api.bearer(u.identityUserId))
        .buffer(true)
        .parse((response, callback) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => callback(null, text));
        });
      expect(res.status).toBe(200);
      return (JSON.parse(res.body as string) as { credits: Record<string, unknown> }).credits;
    };

    it('is null once a cancel is scheduled for the period end: the plan credits outlive the subscription', async () => {
      const start = new Date(Date.now() - DAY);
      const end = addMonths(start, 1);
      const period = { starts_at: start.toISOString(), ends_at: end.toISOString() };
      const { user: u, subId } = await subscribed('PRO', { start });
      await spend(u.id, 100);
      // PRO expires unspent plan credits at the renewal (none): the period end.
      const renewing = { balance: 900, plan_remaining: 900, purchased_remaining: 0 };
      expect(await credits(u)).toMatchObject({ ...renewing, plan_expires_at: end.toISOString() });
      expect(await exported(u)).toEqual({ ...renewing, plan_expires_at: end.toISOString() });

      const cancelAtEnd = { action: 'cancel', effective_at: end.toISOString(), resume_at: null };
      const updated = paddleSubscription('node-sdk.subscription-updated.json', {
        subId,
        priceId: PRICE.PRO,
        period,
        scheduledChange: cancelAtEnd,
      });
      expect((await deliver(api, updated)).outcome).toBe('processed');
      expect(await credits(u)).toMatchObject({ ...renewing, plan_expires_at: null });
      expect(await exported(u)).toEqual({ ...renewing, plan_expires_at: null });

      // What happens at the period end: Paddle cancels, the user drops to FREE, no renewal grants
      // anything, and nothing expires the plan credits (no expiry row, the balance stays).
      const canceled = paddleSubscription('node-sdk.subscription-canceled.json', {
        subId,
        priceId: PRICE.PRO,
        period: null,
      });
      expect((await deliver(api, canceled)).outcome).toBe('processed');
      await api.app.get(AllowanceService).run(addMonths(end, 2));
      expect(await user(u.id)).toMatchObject({ currentTier: 'FREE', creditBalance: 900 });
      expect(await rows(u.id, 'expiry')).toEqual([]);
      expect(await credits(u)).toMatchObject({ ...renewing, plan_expires_at: null });
      expect(await exported(u)).toEqual({ ...renewing, plan_expires_at: null });

      // Only a later allowance closes them: a new subscription's first period, under PRO's rule.
      const again = newSubId();
      const created = subscriptionEvent({
        type: 'subscription.created',
        subId: again,
        priceId: PRICE.PRO,
        token: checkoutToken(api, u, 'PRO'),
        periodStart: new Date(),
        periodEnd: addMonths(new Date(), 1),
      });
      expect((await deliver(api, created)).outcome).toBe('processed');
      expect((await rows(u.id, 'expiry')).map((e) => [e.jobId, e.delta])).toEqual([
        [`first-period:${subId}`, -900],
      ]);
      expect(await credits(u)).toMatchObject({ balance: 1000, plan_expires_at: expect.any(String) });
    });

    it('keeps the period end for a pending change to another paid tier: the renewal still expires them', async () => {
      const start = new Date(Date.now() - DAY);
      const end = addMonths(start, 1);
      const period = { starts_at: start.toISOString(), ends_at: end.toISOString() };
      const { user: u, subId } = await subscribed('TEAM', { start });
      // TEAM to PRO within the period: TEAM stays until the period end, PRO is pending.
      const downgrade = paddleSubscription('node-sdk.subscription-updated.json', {
        subId,
        priceId: PRICE.PRO,
        period,
      });
      expect((await deliver(api, downgrade)).outcome).toBe('processed');
      expect(
        await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } }),
      ).toMatchObject({ tier: 'TEAM', pendingTier: 'PRO' });
      expect(await credits(u)).toMatchObject({ plan_remaining: 5000, plan_expires_at: end.toISOString() });

      // The renewal closes TEAM's allowance under TEAM's rule (cap:2000), whatever the next tier.
      const renewal = transactionEvent({ subId, priceId: PRICE.PRO, total: '1500' });
      expect((await deliver(api, renewal)).outcome).toBe('processed');
      expect((await rows(u.id, 'expiry')).map((e) => [e.jobId, e.delta])).toEqual([
        [`first-period:${subId}`, -3000],
      ]);
    });
  });

  describe('clawback', () => {
    const fixture = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'));

    /** Paddle's own adjustment.updated (paddle-node-sdk fixture) for our transaction, approved. */
    function paddleAdjustment(input: {
      adjId: string;
      txnId: string;
      subId: string | null;
      action: string;
      type: string;
      total: string;
    }) {
      const event = fixture('node-sdk.adjustment-updated.json');
      event.event_id = newEventId();
      event.occurred_at = new Date().toISOString();
      Object.assign(event.data, {
        id: input.adjId,
        transaction_id: input.txnId,
        subscription_id: input.subId,
        customer_id: input.subId ? `ctm_${input.subId}` : null,
        action: input.action,
        type: input.type,
        status: 'approved',
        created_at: new Date(Date.now() - 60_000).toISOString(),
        updated_at: new Date().toISOString(),
      });
      event.data.totals = { ...event.data.totals, total: input.total };
      return event;
    }

    it('takes back what a refunded or charged-back transaction granted, once, proportionally, below zero', async () => {
      const { user: u, subId } = await subscribed('PRO');
      const firstTxn = transactionEvent({ subId, origin: 'web', priceId: PRICE.PRO, total: '1500' });
      expect((await deliver(api, firstTxn)).status).toBe(200);
      const token = (await packCheckout(u, PACK_S)).body.custom_data.checkout_token;
      const pack = transactionEvent({
        subId: null,
        origin: 'web',
        priceId: PACK_S,
        total: '1000',
        token,
        customerId: null,
      });
      await deliver(api, pack);
      await spend(u.id, 200);
      expect(await credits(u)).toMatchObject({
        balance: 1300,
        plan_remaining: 800,
        purchased_remaining: 500,
      });

      // A pending refund takes nothing; its approval takes the whole pack (purchased credits first), once.
      const adjId = `adj_${randomUUID().slice(0, 12)}`;
      const pending = adjustmentEvent({
        adjId,
        txnId: pack.data.id,
        status: 'pending_approval',
        total: '1000',
      });
      await deliver(api, pending);
      expect(await rows(u.id, 'clawback')).toEqual([]);
      const approved = paddleAdjustment({
        adjId,
        txnId: pack.data.id,
        subId: null,
        action: 'refund',
        type: 'full',
        total: '1000',
      });
      await Promise.all([
        deliver(api, approved),
        deliver(api, approved),
        deliver(api, { ...approved, event_id: newEventId() }),
      ]);
      expect((await rows(u.id, 'clawback')).map((c) => [c.jobId, c.delta])).toEqual([[adjId, -500]]);
      expect(await credits(u)).toMatchObject({ balance: 800, plan_remaining: 800, purchased_remaining: 0 });

      // A partial refund of the subscription's first payment (100 of 1500): ceil(1000 x 100 / 1500) = 67.
      const partialId = `adj_${randomUUID().slice(0, 12)}`;
      await deliver(
        api,
        paddleAdjustment({
          adjId: partialId,
          txnId: firstTxn.data.id,
          subId,
          action: 'refund',
          type: 'partial',
          total: '100',
        }),
      );
      // Then a chargeback of the whole payment takes the rest of its 1000, and the balance goes negative.
      await spend(u.id, 700);
      const chargebackId = `adj_${randomUUID().slice(0, 12)}`;
      const cb = await deliver(
        api,
        paddleAdjustment({
          adjId: chargebackId,
          txnId: firstTxn.data.id,
          subId,
          action: 'chargeback',
          type: 'full',
          total: '1500',
        }),
      );
      expect(cb.outcome).toBe('processed');
      expect((await rows(u.id, 'clawback')).map((c) => [c.jobId, c.delta])).toEqual([
        [adjId, -500],
        [partialId, -67],
        [chargebackId, -933],
      ]);
      expect(await user(u.id)).toMatchObject({ creditBalance: -900, purchasedCredits: 0 });
      await expect(spend(u.id, 1)).rejects.toBeInstanceOf(InsufficientCreditsError);
      const completion = await api.http
        .post('/api/v1/ai/completions')
        .set('Authorization', await api.bearer(u.identityUserId))
        .send({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
      expect(completion.status).toBe(402);
      expect(completion.body.code).toBe('insufficient_credits');
      const audits = await api.prisma.auditLog.findMany({
        where: { action: 'credits.clawed_back', userId: u.identityUserId },
      });
      expect(audits.map((a) => (a.details as { credits: number }).credits).sort((a, b) => a - b)).toEqual([
        67, 500, 933,
      ]);
    });

    it('writes nothing for a refund that finds nothing left to take back, also when replayed after a later month', async () => {
      const start = new Date(Date.now() - 86_400_000);
      const { user: u, subId } = await subscribed('TEAM', { annual: true, start });
      const firstTxn = transactionEvent({ subId, origin: 'web', priceId: PRICE.TEAM, total: '48000' });
      expect((await deliver(api, firstTxn)).outcome).toBe('processed');
      const job = api.app.get(AllowanceService);
      await job.run(new Date(addMonths(start, 1).getTime() + 3_600_000));
      const full = (adjId: string) =>
        paddleAdjustment({
          adjId,
          txnId: firstTxn.data.id,
          subId,
          action: 'refund',
          type: 'full',
          total: '48000',
        });

      // The full refund takes back what the period granted so far (5000 + 5000, 3000 expired by the cap).
      const firstId = `adj_${randomUUID().slice(0, 12)}`;
      expect((await deliver(api, full(firstId))).outcome).toBe('processed');
      expect((await rows(u.id, 'clawback')).map((c) => [c.jobId, c.delta])).toEqual([[firstId, -7000]]);

      // The same refund again under a new adjustment id (a redelivery Paddle would never refund twice):
      // recorded and audited as an adjustment, but no 0-credit ledger row and no claw-back audit.
      const secondId = `adj_${randomUUID().slice(0, 12)}`;
      const second = full(secondId);
      const applied = await deliver(api, second);
      expect(applied.outcome).toBe('processed');
      expect((await rows(u.id, 'clawback')).map((c) => c.jobId)).toEqual([firstId]);
      const record = await api.prisma.billingAdjustment.findUniqueOrThrow({
        where: { providerAdjustmentId: secondId },
      });
      expect(record).toMatchObject({ status: 'approved', clawedBackCredits: 0 });
      const clawAudits = () =>
        api.prisma.auditLog.findMany({ where: { action: 'credits.clawed_back', userId: u.identityUserId } });
      expect((await clawAudits()).map((a) => (a.details as { adjustment_id: string }).adjustment_id)).toEqual(
        [firstId],
      );
      expect(
        await api.prisma.auditLog.count({ where: { action: 'adjustment.updated', resourceId: record.id } }),
      ).toBe(1);

      // The next month is recorded, granting nothing for the refunded payment (decision "refunded annual
      // period"). Replays of the second refund and of the payment then find the refund already applied:
      // nothing taken (a claw-back may take the balance below 0, so one would show), however the events
      // are redelivered.
      await job.run(new Date(addMonths(start, 2).getTime() + 3_600_000));
      expect(
        (await rows(u.id, 'grant'))
          .filter((g) => g.jobId === `allowance:${subId}:${start.toISOString()}:2`)
          .map((g) => g.delta),
      ).toEqual([0]);
      const balance = (await user(u.id)).creditBalance;
      expect((await deliver(api, { ...second, event_id: newEventId() })).outcome).toBe('processed');
      expect((await deliver(api, { ...firstTxn, event_id: newEventId() })).outcome).toBe('processed');
      expect((await rows(u.id, 'clawback')).map((c) => [c.jobId, c.delta])).toEqual([[firstId, -7000]]);
      expect((await user(u.id)).creditBalance).toBe(balance);
      expect(await clawAudits()).toHaveLength(1);
    });
  });

  describe('clawback before the grant', () => {
    it('applies a refund delivered before its pack transaction, and before subscription.created, once the grant exists', async () => {
      // A pack: the approved refund comes first; the purchase then grants and is taken back at once.
      const buyer = await createUser(api.prisma);
      const token = (await packCheckout(buyer, PACK_S)).body.custom_data.checkout_token;
      const pack = transactionEvent({
        subId: null,
        origin: 'web',
        priceId: PACK_S,
        total: '1000',
        token,
        customerId: null,
      });
      const packRefund = `adj_${randomUUID().slice(0, 12)}`;
      const early = adjustmentEvent({
        adjId: packRefund,
        txnId: pack.data.id,
        status: 'approved',
        total: '1000',
      });
      expect((await deliver(api, early)).outcome).toBe('processed');
      expect((await deliver(api, pack)).outcome).toBe('processed');
      await deliver(api, { ...pack, event_id: newEventId() });
      // Both rows are written by the purchase's transaction (same created_at): compare them by kind.
      const byKind = (a: { kind: string }, b: { kind: string }) => a.kind.localeCompare(b.kind);
      expect((await rows(buyer.id)).sort(byKind).map((r) => [r.kind, r.delta])).toEqual([
        ['clawback', -500],
        ['purchase', 500],
      ]);
      expect(await user(buyer.id)).toMatchObject({ creditBalance: 0, purchasedCredits: 0 });

      // A subscription's first payment: transaction, then its refund, then subscription.created last.
      const u = await createUser(api.prisma);
      const subId = newSubId();
      const first = transactionEvent({ subId, origin: 'web', priceId: PRICE.PRO, total: '1500' });
      expect((await deliver(api, first)).status).toBe(200);
      const firstRefund = `adj_${randomUUID().slice(0, 12)}`;
      await deliver(
        api,
        adjustmentEvent({
          adjId: firstRefund,
          txnId: first.data.id,
          subId,
          status: 'approved',
          total: '1500',
        }),
      );
      const created = subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE.PRO,
        token: checkoutToken(api, u, 'PRO'),
      });
      expect((await deliver(api, created)).outcome).toBe('processed');
      expect((await rows(u.id)).sort(byKind).map((r) => [r.jobId, r.kind, r.delta])).toEqual([
        [firstRefund, 'clawback', -1000],
        [`first-period:${subId}`, 'grant', 1000],
      ]);
      expect((await user(u.id)).creditBalance).toBe(0);
    });

    it('never takes a proration refunded before the first payment arrived for the first payment', async () => {
      // created, a proration (origin subscription_update), its full refund, then the first payment last:
      // the proration granted nothing, so its refund takes nothing, and the first period's grant stays.
      const { user: u, subId } = await subscribed('PRO');
      const proration = transactionEvent({
        subId,
        origin: 'subscription_update',
        priceId: PRICE.PRO,
        total: '300',
      });
      expect((await deliver(api, proration)).outcome).toBe('processed');
      const refundId = `adj_${randomUUID().slice(0, 12)}`;
      const refund = adjustmentEvent({
        adjId: refundId,
        txnId: proration.data.id,
        subId,
        status: 'approved',
        total: '300',
      });
      expect((await deliver(api, refund)).outcome).toBe('processed');
      const first = transactionEvent({
        subId,
        origin: 'web',
        priceId: PRICE.PRO,
        total: '1500',
        occurredAt: new Date(Date.now() - 86_400_000),
      });
      expect((await deliver(api, first)).outcome).toBe('processed');
      await deliver(api, { ...refund, event_id: newEventId() });
      expect(await rows(u.id, 'clawback')).toEqual([]);
      expect((await user(u.id)).creditBalance).toBe(1000);
      const record = await api.prisma.billingAdjustment.findUniqueOrThrow({
        where: { providerAdjustmentId: refundId },
      });
      expect(record.clawedBackCredits ?? 0).toBe(0);
    });

    it('never reads a refunded proration recorded before the first payment as the annual period’s payment', async () => {
      const start = new Date(Date.now() - 86_400_000);
      const { user: u, subId } = await subscribed('PRO', { annual: true, start });
      // The first payment's webhook is late; a one-off charge of the period and its refund are recorded.
      const charge = transactionEvent({
        subId,
        origin: 'subscription_charge',
        priceId: PRICE.PRO,
        total: '300',
        occurredAt: new Date(start.getTime() + 60_000),
      });
      expect((await deliver(api, charge)).outcome).toBe('processed');
      await deliver(
        api,
        adjustmentEvent({
          adjId: `adj_${randomUUID().slice(0, 12)}`,
          txnId: charge.data.id,
          subId,
          status: 'approved',
          total: '300',
        }),
      );
      await api.app.get(AllowanceService).run(new Date(addMonths(start, 1).getTime() + 3_600_000));
      const month1 = (await rows(u.id, 'grant')).find(
        (g) => g.jobId === `allowance:${subId}:${start.toISOString()}:1`,
      );
      expect(month1?.delta).toBe(1000);
      expect(await rows(u.id, 'clawback')).toEqual([]);
    });

    it('applies a refund of a parked renewal when subscription.created grants the renewal', async () => {
      // Nothing ties the subscription to a user yet: the first payment is recorded, the renewal parked.
      const u = await createUser(api.prisma);
      const subId = newSubId();
      const start = new Date(Date.now() - 40 * 86_400_000);
      const first = transactionEvent({ subId, origin: 'web', customerId: null, occurredAt: start });
      expect((await deliver(api, first)).outcome).toBe('processed');
      const renewal = transactionEvent({ subId, origin: 'subscription_recurring', customerId: null });
      expect((await deliver(api, renewal)).outcome).toBe('skipped');
      // Its refund is recorded; there is no grant to take back yet.
      const renewalRefund = `adj_${randomUUID().slice(0, 12)}`;
      const refund = adjustmentEvent({
        adjId: renewalRefund,
        txnId: renewal.data.id,
        status: 'approved',
        total: '1500',
      });
      expect((await deliver(api, refund)).outcome).toBe('processed');
      expect(await rows(u.id)).toEqual([]);

      const created = subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE.PRO,
        token: checkoutToken(api, u, 'PRO'),
        occurredAt: start,
      });
      expect((await deliver(api, created)).outcome).toBe('processed');
      await deliver(api, { ...created, event_id: newEventId() });
      const byJob = (a: { jobId: string }, b: { jobId: string }) => a.jobId.localeCompare(b.jobId);
      expect((await rows(u.id)).sort(byJob).map((r) => [r.jobId, r.kind, r.delta])).toEqual(
        [
          [renewalRefund, 'clawback', -1000],
          [`first-period:${subId}`, 'grant', 1000],
          // PRO:none: the first period ended when the renewal's began, so its unspent credits expire, as
          // they would have had the events come in time (decision "late allowance").
          [`first-period:${subId}`, 'expiry', -1000],
          [renewal.data.id, 'grant', 1000],
        ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      );
      // The renewal's credits are taken back: nothing is left, as in the in-time order.
      expect((await user(u.id)).creditBalance).toBe(0);
      const clawed = await api.prisma.auditLog.findMany({
        where: { action: 'credits.clawed_back', userId: u.identityUserId },
      });
      expect(clawed.map((a) => (a.details as { transaction_id: string }).transaction_id)).toEqual([
        renewal.data.id,
      ]);
    });
  });

  describe('clawback of an annual payment', () => {
    it('takes back the months the paid period granted so far, net of expired credits, once', async () => {
      const start = new Date(Date.now() - 86_400_000);
      const { user: u, subId } = await subscribed('TEAM', { annual: true, start });
      const firstTxn = transactionEvent({ subId, origin: 'web', priceId: PRICE.TEAM, total: '48000' });
      expect((await deliver(api, firstTxn)).outcome).toBe('processed');
      const job = api.app.get(AllowanceService);
      await job.run(new Date(addMonths(start, 1).getTime() + 3_600_000));
      await job.run(new Date(addMonths(start, 2).getTime() + 3_600_000));
      const grants = await rows(u.id, 'grant');
      expect(grants.map((g) => g.jobId)).toEqual([
        `first-period:${subId}`,
        `allowance:${subId}:${start.toISOString()}:1`,
        `allowance:${subId}:${start.toISOString()}:2`,
      ]);
      // TEAM keeps at most 2000 at each new month: 3000, then 5000 expired; 7000 of the 15000 are left.
      const expired = (await rows(u.id, 'expiry')).reduce((sum, e) => sum + e.delta, 0);
      expect(expired).toBe(-8000);
      expect((await user(u.id)).creditBalance).toBe(7000);

      const refund = (adjId: string, type: string, total: string, action = 'refund') => {
        const event = adjustmentEvent({
          adjId,
          txnId: firstTxn.data.id,
          subId,
          status: 'approved',
          total,
          action,
        });
        event.data.type = type;
        return event;
      };
      const partialId = `adj_${randomUUID().slice(0, 12)}`;
      // A quarter of the payment: a quarter of what the period granted and still holds, rounded up.
      await Promise.all([0, 1, 2].map(() => deliver(api, refund(partialId, 'partial', '12000'))));
      const chargebackId = `adj_${randomUUID().slice(0, 12)}`;
      await deliver(api, refund(chargebackId, 'full', '48000', 'chargeback'));
      expect((await rows(u.id, 'clawback')).map((c) => [c.jobId, c.delta])).toEqual([
        [partialId, -1750],
        [chargebackId, -5250],
      ]);
      expect((await user(u.id)).creditBalance).toBe(0);
    });
  });

  describe('low balance', () => {
    const alerts = async (userId: string) =>
      (await api.prisma.outboxEntry.findMany({ where: { jobName: 'send-email' } })).filter((e) => {
        const payload = e.payload as { userId?: string; templateKey?: string };
        return payload.userId === userId && payload.templateKey === 'low_balance';
      });
    /** A metered call through the credits module: reserve `reserved`, then settle at `charged`. */
    const call = async (userId: string, reserved: number, charged: number) => {
      const reservation = await spend(userId, reserved);
      expect(reservation.applied).toBe(true);
      await api.app.get(MeteredCreditsService).settle(reservation.spend.jobId, charged);
    };

    it('enqueues one low_balance e-mail when 50 concurrent calls settle across 10% of the allowance', async () => {
      const { user: u } = await subscribed('PRO');
      await Promise.all(Array.from({ length: 50 }, () => call(u.id, 20, 19)));
      expect((await user(u.id)).creditBalance).toBe(50);
      expect(await alerts(u.id)).toHaveLength(1);
      const message = await waitFor(
        () => api.prisma.emailMessage.findFirst({ where: { userId: u.id, templateKey: 'low_balance' } }),
        10_000,
      );
      expect(message).toBeTruthy();
      // Back above the line (credits granted) and below it again in the same period: still one e-mail.
      await grantCredits(api, u.id, 57);
      expect((await user(u.id)).creditBalance).toBe(107);
      await call(u.id, 10, 10);
      expect((await user(u.id)).creditBalance).toBe(97);
      expect(await alerts(u.id)).toHaveLength(1);
      expect(
        await api.prisma.emailMessage.count({ where: { userId: u.id, templateKey: 'low_balance' } }),
      ).toBe(1);
    });

    it('is decided on settled spends: reservations, refunds and other calls in flight never send it', async () => {
      const { user: u } = await subscribed('PRO');
      const metered = api.app.get(MeteredCreditsService);
      // Two calls in flight: their reservations take 1000 to 50, far below the line of 100.
      const long = await spend(u.id, 850);
      const short = await spend(u.id, 100);
      expect((await user(u.id)).creditBalance).toBe(50);
      expect(await alerts(u.id)).toEqual([]);
      // The short call costs all it reserved: 50 now, but the long call's 850 are still only held.
      await metered.settle(short.spend.jobId, 100);
      expect((await user(u.id)).creditBalance).toBe(50);
      expect(await alerts(u.id)).toEqual([]);
      // A third call fails and is refunded: nothing spent.
      const failed = await spend(u.id, 40);
      await metered.refund(failed.spend.jobId, 'provider_failed');
      expect(await alerts(u.id)).toEqual([]);
      // The long call really costs 820: 900 -> 80 settled, the crossing spend.
      await metered.settle(long.spend.jobId, 820);
      expect((await user(u.id)).creditBalance).toBe(80);
      const [alert, ...more] = await alerts(u.id);
      expect(more).toEqual([]);
      expect(alert.payload).toMatchObject({ templateKey: 'low_balance', data: { balance: 80, tier: 'PRO' } });
    });

    it('is sent by a plain deduct (no reservation) that crosses the line, in the caller’s unit of work', async () => {
      const { user: u } = await subscribed('PRO');
      const credits = api.app.get(CreditsService);
      const deduct = (amount: number) =>
        api.app
          .get(UnitOfWork)
          .run((tx) => credits.deduct(tx, { userId: u.id, amount, jobId: `deduct-${randomUUID()}` }));
      await deduct(900);
      expect(await alerts(u.id)).toEqual([]);
      await deduct(5);
      expect((await user(u.id)).creditBalance).toBe(95);
      const [alert, ...more] = await alerts(u.id);
      expect(more).toEqual([]);
      expect(alert.payload).toMatchObject({ data: { balance: 95 } });
      // A rolled-back deduct leaves no alert behind: the outbox row is in its transaction.
      const other = (await subscribed('PRO')).user;
      await expect(
        api.app.get(UnitOfWork).run(async (tx) => {
          await credits.deduct(tx, { userId: other.id, amount: 950, jobId: `deduct-${randomUUID()}` });
          throw new Error('the caller fails after the deduct');
        }),
      ).rejects.toThrow('the caller fails');
      expect((await user(other.id)).creditBalance).toBe(1000);
      expect(await alerts(other.id)).toEqual([]);
    });
  });

  describe('admin metrics', () => {
    it('report credits per day and the packs sold', async () => {
      const admin = await api.prisma.user.upsert({
        where: { identityUserId: 'user_credit_admin' },
        create: { identityUserId: 'user_credit_admin', email: 'admin@example.com' },
        update: {},
      });
      const res = await api.http
        .get('/api/v1/admin/metrics/overview')
        .set('Authorization', await api.bearer(admin.identityUserId, 'admin@example.com'));
      expect(res.status).toBe(200);
      const sums = await api.prisma.$queryRaw<{ kind: string; sum: number }[]>`
        SELECT kind, SUM(delta)::int AS sum FROM credit_transactions GROUP BY kind`;
      const of = (kind: string) => sums.find((s) => s.kind === kind)?.sum ?? 0;
      expect(res.body.credits.last_30_days).toEqual({
        granted: of('grant'),
        purchased: of('purchase'),
        spent: -(of('spend') + of('settle') + of('refund')),
        expired: -of('expiry'),
        clawed_back: -of('clawback'),
      });
      const packs = await api.prisma.creditTransaction.count({ where: { kind: 'purchase' } });
      expect(res.body.revenue.packs).toMatchObject({ sold: packs, credits: of('purchase') });
      expect(res.body.revenue.packs.revenue.USD).toBeGreaterThan(0);
    });
  });
});
