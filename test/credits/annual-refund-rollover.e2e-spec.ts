import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { adjust, annualPeriod, paddleAdjustment } from '../support/annual.js';
import { deliver, newEventId } from '../support/billing.js';
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
});
