import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { MeteredCreditsService } from '../../src/modules/credits/metered-credits.service.js';
import { adjust, annualPeriod, paddleAdjustment } from '../support/annual.js';
import { deliver, newEventId, transactionEvent } from '../support/billing.js';
import { expectLedgerConsistent } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

// Refunds of an annual payment under a rollover rule that expires plan credits (docs/decisions/billing.md,
// "refunded annual period"; docs/decisions/credits.md, "claw-back scope"). PRO grants 1000 a month and rolls
// nothing over (`none`), TEAM grants 5000 a month and keeps at most 2000 (`cap:2000`). Signed events through
// the receiver and a real worker; the allowance job with a simulated clock.

describe('refunds of an annual payment under an expiring rollover', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { CREDIT_ROLLOVER: 'PRO:none,TEAM:cap:2000' } });
    api = await env.startApi();
    await env.startWorker();
  });
  afterEach(async () => {
    await expectLedgerConsistent(api.prisma, { allowNegative: true });
  });
  afterAll(async () => {
    await env.close();
  });

  const balance = async (userId: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })).creditBalance;
  const granted = async (jobId: string) =>
    (
      await api.prisma.creditTransaction.findUniqueOrThrow({
        where: { jobId_kind: { jobId, kind: 'grant' } },
      })
    ).delta;
  const clawedBack = async (adjId: string) =>
    (await api.prisma.billingAdjustment.findUniqueOrThrow({ where: { providerAdjustmentId: adjId } }))
      .clawedBackCredits;

  describe('a second partial refund', () => {
    // Review repro: 18000 paid, half refunded in month 0, the later months granted net of it (500 each, the
    // month before expiring at each), then a quarter more. A month granted now would hold
    // 1000 - ceil(1000 x 13500 / 18000) = 250: the live month keeps that, not 0.
    it('none: takes the live month down to what a month granted now holds, once', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      const first = await adjust(api, sub, { type: 'partial', total: 9000 });
      expect(await clawedBack(first)).toBe(500);
      await sub.runAt(1);
      await sub.runAt(2);
      expect(await granted(sub.month(2))).toBe(500);
      expect(await balance(sub.user.id)).toBe(500);

      const second = paddleAdjustment(sub, { type: 'partial', total: 4500 });
      expect((await deliver(api, second)).outcome).toBe('processed');
      expect(await clawedBack(second.data.id as string)).toBe(250);
      expect(await balance(sub.user.id)).toBe(250);
      // Redelivered (a replay under a new event id) after the next month: applied once.
      await sub.runAt(3);
      expect(await granted(sub.month(3))).toBe(250);
      expect((await deliver(api, { ...second, event_id: newEventId() })).outcome).toBe('processed');
      expect(await balance(sub.user.id)).toBe(250);
      expect(await clawedBack(second.data.id as string)).toBe(250);
    });

    it('none: two refunds before the later months take what the two together would', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      await adjust(api, sub, { type: 'partial', total: 9000 });
      const second = await adjust(api, sub, { type: 'partial', total: 4500 });
      expect(await clawedBack(second)).toBe(250);
      await sub.runAt(1);
      expect(await granted(sub.month(1))).toBe(250);
      expect(await balance(sub.user.id)).toBe(250);
    });

    it('none: a refund after the last month of the period takes the last month to its share', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      await adjust(api, sub, { type: 'partial', total: 9000 });
      for (let month = 1; month <= 11; month += 1) await sub.runAt(month);
      expect(await granted(sub.month(11))).toBe(500);
      expect(await balance(sub.user.id)).toBe(500);
      const second = await adjust(api, sub, { type: 'partial', total: 4500 });
      expect(await clawedBack(second)).toBe(250);
      expect(await balance(sub.user.id)).toBe(250);
    });

    // TEAM: 48000 paid, half refunded in month 0 (2500 of month 0 taken), months 1 and 2 granted 2500 each,
    // what exceeds 2000 of the month before expiring (500, then 2500): 4500 live, the current month's 2500
    // and 2000 rolled over, each credit of them backed by the half still paid. A quarter more leaves a
    // quarter paid: half of them, 2250 (the current month 1250, as a month granted now).
    it('cap: takes its share of what is left of the payment, not of credits that already expired', async () => {
      const sub = await annualPeriod(api, { tier: 'TEAM', total: 48_000 });
      const first = await adjust(api, sub, { type: 'partial', total: 24_000 });
      expect(await clawedBack(first)).toBe(2500);
      await sub.runAt(1);
      await sub.runAt(2);
      expect(await granted(sub.month(2))).toBe(2500);
      expect(await balance(sub.user.id)).toBe(4500);
      const second = await adjust(api, sub, { type: 'partial', total: 12_000 });
      expect(await clawedBack(second)).toBe(2250);
      expect(await balance(sub.user.id)).toBe(2250);
      // The next month: 5000 - ceil(5000 x 36000 / 48000) = 1250, and 250 over the cap expire.
      await sub.runAt(3);
      expect(await granted(sub.month(3))).toBe(1250);
      expect(await balance(sub.user.id)).toBe(3250);
    });
  });

  describe('a chargeback the merchant won', () => {
    const spend = (userId: string, amount: number) =>
      api.app.get(MeteredCreditsService).reserve({ userId, amount, jobId: `spend-${randomUUID()}` });
    const given = (reverseId: string) =>
      api.prisma.creditTransaction.findUnique({
        where: { jobId_kind: { jobId: reverseId, kind: 'clawback' } },
      });
    const reversal = (identityUserId: string) =>
      api.prisma.auditLog.findMany({
        where: { action: 'credits.clawback_reversed', userId: identityUserId },
      });

    it('none: gives back everything its claw-back took while that month is still current', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      await spend(sub.user.id, 600);
      const chargeback = await adjust(api, sub, { type: 'full', total: 18_000, action: 'chargeback' });
      expect(await clawedBack(chargeback)).toBe(1000);
      expect(await balance(sub.user.id)).toBe(-600);
      const reverse = await adjust(api, sub, {
        type: 'full',
        total: 18_000,
        action: 'chargeback_reverse',
      });
      expect((await given(reverse))?.delta).toBe(1000);
      expect(await balance(sub.user.id)).toBe(400);
    });

    // 600 of month 0's 1000 spent, the chargeback took the 400 left and the 600 spent (balance -600), month
    // 1 granted nothing while charged back. Had nothing been taken, the 400 would have expired with month 0;
    // the 600 spent were paid back out of later credits: they come back, the 400 do not.
    it('none: once that month closed, gives back the credits already spent, not those that would have expired', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      await spend(sub.user.id, 600);
      await adjust(api, sub, { type: 'full', total: 18_000, action: 'chargeback' });
      await sub.runAt(1);
      expect(await granted(sub.month(1))).toBe(0);
      expect(await balance(sub.user.id)).toBe(-600);
      const reverse = paddleAdjustment(sub, { type: 'full', total: 18_000, action: 'chargeback_reverse' });
      const reverseId = reverse.data.id as string;
      expect((await deliver(api, reverse)).outcome).toBe('processed');
      expect(await given(reverseId)).toMatchObject({
        delta: 600,
        details: { clawed_back: 1000, expired: 400 },
      });
      expect(await balance(sub.user.id)).toBe(0);
      expect((await reversal(sub.user.identityUserId)).map((a) => a.details)).toMatchObject([
        { adjustment_id: reverseId, credits: 600, withheld: 400 },
      ]);
      // The later months grant again; a redelivery gives nothing twice.
      await sub.runAt(2);
      expect(await granted(sub.month(2))).toBe(1000);
      expect((await deliver(api, { ...reverse, event_id: newEventId() })).outcome).toBe('processed');
      expect(await balance(sub.user.id)).toBe(1000);
      expect(await reversal(sub.user.identityUserId)).toHaveLength(1);
    });

    // TEAM: 1000 of month 0's 5000 spent, the chargeback took 4000 unspent and 1000 spent. At month 0's end
    // the cap would have kept 2000 of the 4000 (the claw-back left none of its own).
    it('cap: once that month closed, gives back the spent credits and the unspent ones the cap would have kept', async () => {
      const sub = await annualPeriod(api, { tier: 'TEAM', total: 48_000 });
      await spend(sub.user.id, 1000);
      await adjust(api, sub, { type: 'full', total: 48_000, action: 'chargeback' });
      expect(await balance(sub.user.id)).toBe(-1000);
      await sub.runAt(1);
      const reverse = await adjust(api, sub, {
        type: 'full',
        total: 48_000,
        action: 'chargeback_reverse',
      });
      expect(await given(reverse)).toMatchObject({ delta: 3000, details: { expired: 2000 } });
      expect(await balance(sub.user.id)).toBe(2000);
    });

    it('none: applies a reverse delivered before its chargeback when the chargeback is taken back', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      const reverse = paddleAdjustment(sub, { type: 'full', total: 18_000, action: 'chargeback_reverse' });
      expect((await deliver(api, reverse)).outcome).toBe('processed');
      expect(await given(reverse.data.id as string)).toBeNull();
      const chargeback = paddleAdjustment(sub, { type: 'full', total: 18_000, action: 'chargeback' });
      expect((await deliver(api, chargeback)).outcome).toBe('processed');
      expect(await clawedBack(chargeback.data.id as string)).toBe(1000);
      expect((await given(reverse.data.id as string))?.delta).toBe(1000);
      expect(await balance(sub.user.id)).toBe(1000);
      // Both redelivered: nothing moves.
      for (const event of [chargeback, reverse]) {
        expect((await deliver(api, { ...event, event_id: newEventId() })).outcome).toBe('processed');
      }
      expect(await balance(sub.user.id)).toBe(1000);
      await sub.runAt(1);
      expect(await granted(sub.month(1))).toBe(1000);
    });

    /** A pack's payment (pri_pack_s, 500 credits) bought through a checkout token, not yet delivered. */
    async function packPayment(identityUserId: string) {
      const checkout = await api.http
        .post('/api/v1/billing/credit-packs/checkout')
        .set('Authorization', await api.bearer(identityUserId))
        .send({ price_id: 'pri_pack_s' });
      return transactionEvent({
        subId: null,
        origin: 'web',
        priceId: 'pri_pack_s',
        total: '1000',
        token: checkout.body.custom_data.checkout_token,
        customerId: null,
      });
    }

    it('none: gives a won chargeback of a pack back as purchased credits, also after the month closed', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      const pack = await packPayment(sub.user.identityUserId);
      expect((await deliver(api, pack)).outcome).toBe('processed');
      const owner = { subId: null, txnId: pack.data.id };
      await adjust(api, owner, { type: 'full', total: 1000, action: 'chargeback' });
      expect(await api.prisma.user.findUniqueOrThrow({ where: { id: sub.user.id } })).toMatchObject({
        creditBalance: 1000,
        purchasedCredits: 0,
      });
      await sub.runAt(1);
      await adjust(api, owner, { type: 'full', total: 1000, action: 'chargeback_reverse' });
      expect(await api.prisma.user.findUniqueOrThrow({ where: { id: sub.user.id } })).toMatchObject({
        creditBalance: 1500,
        purchasedCredits: 500,
      });
    });

    it('applies a chargeback and its reverse delivered before the pack payment they adjust, once', async () => {
      const sub = await annualPeriod(api, { total: 18_000 });
      const pack = await packPayment(sub.user.identityUserId);
      const owner = { subId: null, txnId: pack.data.id };
      const chargeback = await adjust(api, owner, { type: 'full', total: 1000, action: 'chargeback' });
      await adjust(api, owner, { type: 'full', total: 1000, action: 'chargeback_reverse' });
      expect((await deliver(api, pack)).outcome).toBe('processed');
      expect((await deliver(api, { ...pack, event_id: newEventId() })).outcome).toBe('processed');
      expect(await clawedBack(chargeback)).toBe(500);
      expect(await api.prisma.user.findUniqueOrThrow({ where: { id: sub.user.id } })).toMatchObject({
        creditBalance: 1500,
        purchasedCredits: 500,
      });
    });
  });
});
