import { createUser } from '../factories/user.factory.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { addMonths } from '../../src/modules/billing/jobs/allowance-months.js';
import { AllowanceService } from '../../src/modules/billing/jobs/allowance.service.js';
import { adjust, type AdjustmentAction, annualPeriod, paddleAdjustment, YEARLY } from '../support/annual.js';
import {
  checkoutToken,
  deliver,
  newEventId,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

// An annual payment refunded (or charged back) while its subscription runs on (Paddle refunds without
// cancelling): the allowance job grants the later months of the period net of the refunded share, nothing
// once the whole payment was returned (docs/decisions/billing.md, "refunded annual period"). Signed events
// through the receiver and a real worker; the job with a simulated clock. Rollover `full` (the default), so no
// expiry row blurs the sums; PRO grants 1000 a month.

const PAID = 18_000;

describe('allowance months of a refunded annual payment', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    await env.startWorker();
  });
  afterEach(async () => {
    await expectLedgerConsistent(api.prisma, { allowNegative: true });
  });
  afterAll(async () => {
    await env.close();
  });

  const job = () => api.app.get(AllowanceService);
  const balance = async (userId: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })).creditBalance;
  const ledger = async (userId: string) =>
    (
      await api.prisma.creditTransaction.findMany({
        where: { userId },
        orderBy: [{ createdAt: 'asc' }, { jobId: 'asc' }],
      })
    ).map((r) => `${r.kind}:${r.jobId}=${r.delta}`);
  const row = (jobId: string) =>
    api.prisma.creditTransaction.findUniqueOrThrow({ where: { jobId_kind: { jobId, kind: 'grant' } } });
  const reductions = (identityUserId: string) =>
    api.prisma.auditLog.findMany({
      where: { action: 'credits.allowance_reduced', userId: identityUserId },
      orderBy: { createdAt: 'asc' },
    });

  /** A PRO subscription on Paddle's yearly cycle, created `start`, its first payment of `total` recorded. */
  const annual = (start?: Date, total = PAID) => annualPeriod(api, { start, total });

  /**
   * The same subscription whose subscription.created is late: a subscription.updated created its row (no
   * first-period grant yet), and the first payment is recorded. `created()` delivers the late event.
   */
  async function annualCreatedLate(start = new Date(Date.now() - 86_400_000)) {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const token = checkoutToken(api, user, 'PRO');
    const event = (type: string, occurredAt: Date) =>
      subscriptionEvent({
        type,
        subId,
        priceId: PRICE.PRO,
        billingCycle: YEARLY,
        token,
        occurredAt,
        periodStart: start,
        periodEnd: addMonths(start, 12),
      });
    expect(
      (await deliver(api, event('subscription.updated', new Date(start.getTime() + 1000)))).outcome,
    ).toBe('processed');
    const payment = transactionEvent({
      subId,
      origin: 'web',
      priceId: PRICE.PRO,
      total: String(PAID),
      occurredAt: start,
    });
    expect((await deliver(api, payment)).outcome).toBe('processed');
    const month = (index: number) => `allowance:${subId}:${start.toISOString()}:${index}`;
    const runAt = (index: number) => job().run(new Date(addMonths(start, index).getTime() + 3_600_000));
    const created = async () =>
      expect((await deliver(api, event('subscription.created', start))).outcome).toBe('processed');
    return { user, subId, start, txnId: payment.data.id, month, runAt, created };
  }

  const clawedBackCredits = async (adjId: string) =>
    (await api.prisma.billingAdjustment.findUniqueOrThrow({ where: { providerAdjustmentId: adjId } }))
      .clawedBackCredits;

  /** Paddle's own adjustment.updated (paddle-node-sdk fixture) for `txnId`, approved. */
  const refund = (
    sub: { subId: string; txnId: string },
    input: { type: 'full' | 'partial'; total: number; action?: AdjustmentAction },
  ) => adjust(api, sub, input);

  it('grants every month in full when nothing was refunded', async () => {
    const sub = await annual();
    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(1000);
    await sub.runAt(2);
    expect((await row(sub.month(2))).delta).toBe(1000);
    expect(await ledger(sub.user.id)).toEqual([
      `grant:first-period:${sub.subId}=1000`,
      `grant:${sub.month(1)}=1000`,
      `grant:${sub.month(2)}=1000`,
    ]);
    expect((await row(sub.month(2))).details).toEqual({
      tier: 'PRO',
      source: 'allowance',
      subscription_id: sub.subId,
      month: 2,
    });
    expect(await reductions(sub.user.identityUserId)).toEqual([]);
  });

  it('grants nothing for the months of a fully refunded payment whose subscription runs on', async () => {
    const sub = await annual();
    const adjId = await refund(sub, { type: 'full', total: PAID });
    expect(await balance(sub.user.id)).toBe(0);

    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(0);
    await sub.runAt(2);
    expect((await row(sub.month(2))).delta).toBe(0);
    // Each month is recorded once, granting 0, and a later run finds it done.
    await sub.runAt(2);
    expect(await ledger(sub.user.id)).toEqual([
      `grant:first-period:${sub.subId}=1000`,
      `clawback:${adjId}=-1000`,
      `grant:${sub.month(1)}=0`,
      `grant:${sub.month(2)}=0`,
    ]);
    expect(await balance(sub.user.id)).toBe(0);
    expect((await row(sub.month(1))).details).toEqual({
      tier: 'PRO',
      source: 'allowance',
      subscription_id: sub.subId,
      month: 1,
      reason: 'payment_refunded',
      transaction_id: sub.txnId,
      withheld: 1000,
      refunded: PAID,
      paid: PAID,
    });
    const audits = await reductions(sub.user.identityUserId);
    expect(audits.map((a) => a.details)).toEqual(
      [1, 2].map((index) => ({
        subscription_id: sub.subId,
        transaction_id: sub.txnId,
        job_id: sub.month(index),
        tier: 'PRO',
        reason: 'payment_refunded',
        credits: 0,
        withheld: 1000,
      })),
    );
    expect(audits.every((a) => a.actor === 'system:allowance')).toBe(true);
  });

  it('grants later months net of the refunded share, rounded as the claw-back, partial refunds adding up', async () => {
    const sub = await annual();
    // 4000 of 18000: the claw-back takes ceil(1000 x 4000 / 18000) = 223 of month 0.
    const first = await refund(sub, { type: 'partial', total: 4000 });
    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(777);
    expect((await row(sub.month(1))).details).toMatchObject({
      reason: 'payment_partially_refunded',
      transaction_id: sub.txnId,
      withheld: 223,
      refunded: 4000,
      paid: PAID,
    });
    // 5000 more (9000 of 18000): its claw-back counts month 1 at its full 1000 and the 223 it withheld as
    // taken back: ceil(2000 x 5000 / 18000) = 556. Month 2 keeps half.
    const second = await refund(sub, { type: 'partial', total: 5000 });
    await sub.runAt(2);
    expect((await row(sub.month(2))).delta).toBe(500);
    // The rest (18000 of 18000, a partial refund by its type): nothing is left of any month, and none more.
    const third = await refund(sub, { type: 'partial', total: 9000 });
    await sub.runAt(3);
    expect((await row(sub.month(3))).delta).toBe(0);
    expect(await ledger(sub.user.id)).toEqual([
      `grant:first-period:${sub.subId}=1000`,
      `clawback:${first}=-223`,
      `grant:${sub.month(1)}=777`,
      `clawback:${second}=-556`,
      `grant:${sub.month(2)}=500`,
      `clawback:${third}=-1498`,
      `grant:${sub.month(3)}=0`,
    ]);
    expect(await balance(sub.user.id)).toBe(0);
    expect((await row(sub.month(3))).details).toMatchObject({
      reason: 'payment_refunded',
      withheld: 1000,
      refunded: PAID,
    });
    const clawback = await api.prisma.creditTransaction.findUniqueOrThrow({
      where: { jobId_kind: { jobId: third, kind: 'clawback' } },
    });
    expect(clawback.details).toMatchObject({ transaction_id: sub.txnId, granted: 3000, withheld: 723 });
    expect((await reductions(sub.user.identityUserId)).map((a) => a.details)).toMatchObject([
      { reason: 'payment_partially_refunded', credits: 777, withheld: 223 },
      { reason: 'payment_partially_refunded', credits: 500, withheld: 500 },
      { reason: 'payment_refunded', credits: 0, withheld: 1000 },
    ]);
  });

  it('claws back the months granted before a refund as before, and reduces the months after it', async () => {
    const sub = await annual();
    await sub.runAt(1);
    await sub.runAt(2);
    // A quarter of the payment: a quarter of the 3000 granted so far, as before this rule.
    const partial = await refund(sub, { type: 'partial', total: 4500 });
    expect(await balance(sub.user.id)).toBe(2250);
    await sub.runAt(3);
    expect((await row(sub.month(3))).delta).toBe(750);
    // A chargeback of the whole payment: what is left of the four months, not the 250 month 3 never gave.
    const chargeback = await refund(sub, { type: 'full', total: PAID, action: 'chargeback' });
    expect(await balance(sub.user.id)).toBe(0);
    // Refunds added up are capped at the payment: 22500 of 18000 is all of it.
    await sub.runAt(4);
    expect((await row(sub.month(4))).delta).toBe(0);
    expect(await ledger(sub.user.id)).toEqual([
      `grant:first-period:${sub.subId}=1000`,
      `grant:${sub.month(1)}=1000`,
      `grant:${sub.month(2)}=1000`,
      `clawback:${partial}=-750`,
      `grant:${sub.month(3)}=750`,
      `clawback:${chargeback}=-3000`,
      `grant:${sub.month(4)}=0`,
    ]);
    expect((await row(sub.month(4))).details).toMatchObject({
      reason: 'payment_refunded',
      transaction_id: sub.txnId,
      withheld: 1000,
      refunded: PAID,
      paid: PAID,
    });
  });

  it("reads the refunds of the payment that paid the period, not an earlier period's", async () => {
    // The first year was paid a year ago; the renewal opened the current period.
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const start = new Date(Date.now() - 86_400_000);
    const lastYear = addMonths(start, -12);
    const firstPayment = transactionEvent({
      subId,
      origin: 'web',
      priceId: PRICE.PRO,
      total: String(PAID),
      occurredAt: lastYear,
    });
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: PRICE.PRO,
      billingCycle: YEARLY,
      token: checkoutToken(api, user, 'PRO'),
      occurredAt: start,
      periodStart: start,
      periodEnd: addMonths(start, 12),
    });
    expect((await deliver(api, created)).outcome).toBe('processed');
    expect((await deliver(api, firstPayment)).outcome).toBe('processed');
    const renewal = transactionEvent({ subId, priceId: PRICE.PRO, total: String(PAID), occurredAt: start });
    expect((await deliver(api, renewal)).outcome).toBe('processed');
    const month = (index: number) => `allowance:${subId}:${start.toISOString()}:${index}`;
    const runAt = (index: number) => job().run(new Date(addMonths(start, index).getTime() + 3_600_000));

    // Last year's payment refunded in full: the renewed period's months are still granted in full.
    await refund({ subId, txnId: firstPayment.data.id }, { type: 'full', total: PAID });
    await runAt(1);
    expect((await row(month(1))).delta).toBe(1000);
    expect((await row(month(1))).details).not.toHaveProperty('reason');
    // The renewal's own refund reduces them.
    await refund({ subId, txnId: renewal.data.id }, { type: 'partial', total: 9000 });
    await runAt(2);
    expect((await row(month(2))).delta).toBe(500);
    expect((await row(month(2))).details).toMatchObject({
      reason: 'payment_partially_refunded',
      transaction_id: renewal.data.id,
    });
  });

  // A refund whose claw-back found nothing granted yet (subscription.created lost, the row created by a
  // later subscription.updated) still reduced month 1 (223 withheld). When the late created grants month 0,
  // the refund's claw-back takes its share of the 2000 (445) minus what month 1 already withheld for it.
  it('takes a late claw-back net of what the months already withheld for the same refund', async () => {
    const sub = await annualCreatedLate();
    const first = await refund(sub, { type: 'partial', total: 4000 });
    expect(await clawedBackCredits(first)).toBeNull();
    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(777);
    await sub.created();
    expect((await ledger(sub.user.id)).sort()).toEqual(
      [`grant:${sub.month(1)}=777`, `grant:first-period:${sub.subId}=1000`, `clawback:${first}=-222`].sort(),
    );
    expect(await balance(sub.user.id)).toBe(2000 - 445);
    expect(await clawedBackCredits(first)).toBe(222);
    // A later refund in order takes its own share as before: ceil(2000 x 5000 / 18000) = 556.
    const second = await refund(sub, { type: 'partial', total: 5000 });
    expect(await clawedBackCredits(second)).toBe(556);
    await sub.runAt(2);
    expect((await row(sub.month(2))).delta).toBe(500);
    expect(await balance(sub.user.id)).toBe(2000 - 445 - 556 + 500);
  });

  it('takes several late claw-backs each net of what the months withheld for it, in their order', async () => {
    const sub = await annualCreatedLate();
    const first = await refund(sub, { type: 'partial', total: 4000 });
    const second = await refund(sub, { type: 'partial', total: 5000 });
    await sub.runAt(1);
    // Reduced for 9000 of 18000: 500 withheld, 223 of them for the first refund (ceil(1000 x 4000 / 18000)).
    expect((await row(sub.month(1))).delta).toBe(500);
    await sub.created();
    // 445 - 223 and 556 - (500 - 223): with month 1's 500, 1001 of the 2000 gone, as when both are clawed
    // back in order (223 + 278 of month 0, 500 withheld from month 1).
    expect(await clawedBackCredits(first)).toBe(222);
    expect(await clawedBackCredits(second)).toBe(279);
    expect(await balance(sub.user.id)).toBe(1000 + 500 - 222 - 279);
  });

  // An adjustment clawed back before `clawed_back_credits` existed has only its ledger row to say so.
  it('counts a refund clawed back before the column as clawed back by its ledger row', async () => {
    const sub = await annual();
    const first = await refund(sub, { type: 'partial', total: 4000 });
    await sub.runAt(1);
    await api.prisma.$executeRaw`
      UPDATE billing_adjustments SET clawed_back_credits = NULL WHERE provider_adjustment_id = ${first}`;
    const second = await refund(sub, { type: 'partial', total: 5000 });
    // In order: ceil(2000 x 5000 / 18000), nothing of month 1's 223 is this refund's.
    expect(await clawedBackCredits(second)).toBe(556);
  });

  // Paddle's `type: full` refund adjusts the grand total (the total minus customer credit applied), so its
  // total can be below the payment's: it is the whole payment all the same.
  it('counts a full refund below the payment total as the whole payment, also for later months', async () => {
    const sub = await annual();
    const adjId = await refund(sub, { type: 'full', total: 15_000 });
    expect(await balance(sub.user.id)).toBe(0);
    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(0);
    expect((await row(sub.month(1))).details).toMatchObject({
      reason: 'payment_refunded',
      withheld: 1000,
      refunded: PAID,
      paid: PAID,
    });
    expect(
      (await api.prisma.billingAdjustment.findUniqueOrThrow({ where: { providerAdjustmentId: adjId } })).type,
    ).toBe('full');
  });

  it('counts a full refund below the payment total as the whole payment when its claw-back runs late', async () => {
    const sub = await annualCreatedLate();
    const adjId = await refund(sub, { type: 'full', total: 15_000 });
    await sub.created();
    expect(await clawedBackCredits(adjId)).toBe(1000);
    expect(await balance(sub.user.id)).toBe(0);
  });

  it('grants the whole month when rounding withholds it all, and says partially refunded', async () => {
    const sub = await annual();
    // ceil(1000 x 17990 / 18000) = 1000: nothing is left of the month, but 10 of 18000 were kept.
    await refund(sub, { type: 'partial', total: 17_990 });
    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(0);
    expect((await row(sub.month(1))).details).toMatchObject({
      reason: 'payment_partially_refunded',
      withheld: 1000,
      refunded: 17_990,
    });
  });

  it('gives back what a won chargeback took, once, and grants the later months again', async () => {
    const sub = await annual();
    const chargeback = await refund(sub, { type: 'full', total: PAID, action: 'chargeback' });
    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(0);
    // The merchant won: under `full` the 1000 the claw-back took would all still be there.
    const reverse = paddleAdjustment(sub, { type: 'full', total: PAID, action: 'chargeback_reverse' });
    const reverseId = reverse.data.id as string;
    expect((await deliver(api, reverse)).outcome).toBe('processed');
    expect(await balance(sub.user.id)).toBe(1000);
    await sub.runAt(2);
    expect((await row(sub.month(2))).delta).toBe(1000);
    expect((await row(sub.month(2))).details).not.toHaveProperty('reason');
    // Redelivered after the next month: nothing more.
    expect((await deliver(api, { ...reverse, event_id: newEventId() })).outcome).toBe('processed');
    expect(await ledger(sub.user.id)).toEqual([
      `grant:first-period:${sub.subId}=1000`,
      `clawback:${chargeback}=-1000`,
      `grant:${sub.month(1)}=0`,
      `clawback:${reverseId}=1000`,
      `grant:${sub.month(2)}=1000`,
    ]);
    const given = await api.prisma.creditTransaction.findUniqueOrThrow({
      where: { jobId_kind: { jobId: reverseId, kind: 'clawback' } },
    });
    expect(given.details).toEqual({
      adjustment_id: reverseId,
      action: 'chargeback_reverse',
      transaction_id: sub.txnId,
      clawed_back: 1000,
      purchased: 0,
    });
    const audits = await api.prisma.auditLog.findMany({
      where: { action: 'credits.clawback_reversed', userId: sub.user.identityUserId },
    });
    expect(audits.map((a) => a.details)).toEqual([
      {
        event_id: reverse.event_id,
        adjustment_id: reverseId,
        transaction_id: sub.txnId,
        action: 'chargeback_reverse',
        amount: PAID,
        credits: 1000,
        withheld: 0,
      },
    ]);
    expect(await clawedBackCredits(reverseId)).toBeNull();
  });

  it('gives nothing back for a won chargeback whose claw-back took nothing', async () => {
    const sub = await annual();
    const full = await refund(sub, { type: 'full', total: PAID });
    const chargeback = await refund(sub, { type: 'full', total: PAID, action: 'chargeback' });
    expect(await clawedBackCredits(chargeback)).toBe(0);
    await refund(sub, { type: 'full', total: PAID, action: 'chargeback_reverse' });
    expect(await ledger(sub.user.id)).toEqual([
      `grant:first-period:${sub.subId}=1000`,
      `clawback:${full}=-1000`,
    ]);
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'credits.clawback_reversed', userId: sub.user.identityUserId },
      }),
    ).toBe(0);
  });

  it('takes a later refund of what a won chargeback gave back as of credits never taken', async () => {
    const sub = await annual();
    await refund(sub, { type: 'full', total: PAID, action: 'chargeback' });
    await refund(sub, { type: 'full', total: PAID, action: 'chargeback_reverse' });
    expect(await balance(sub.user.id)).toBe(1000);
    // Half the payment: half of month 0, as if the chargeback had not been.
    const partial = await refund(sub, { type: 'partial', total: 9000 });
    expect(await clawedBackCredits(partial)).toBe(500);
    await sub.runAt(1);
    expect((await row(sub.month(1))).delta).toBe(500);
    expect(await balance(sub.user.id)).toBe(1000);
  });

  // A payment that pays no period (an upgrade's proration, origin subscription_update) is never the period's
  // payment: its refund reduces no month, even when the period's own payment collected nothing (a 100%
  // discount) and the proration is the nearest payment of some money.
  it('does not read the refund of a proration as a refund of the period', async () => {
    const { subId, start, month, runAt } = await annual(undefined, 0);
    const proration = transactionEvent({
      subId,
      origin: 'subscription_update',
      priceId: PRICE.PRO,
      total: '5000',
      occurredAt: new Date(start.getTime() + 10 * 86_400_000),
    });
    expect((await deliver(api, proration)).outcome).toBe('processed');
    await refund({ subId, txnId: proration.data.id }, { type: 'full', total: 5000 });
    await runAt(1);
    const month1 = await row(month(1));
    expect(month1.delta).toBe(1000);
    expect(month1.details).not.toHaveProperty('reason');
  });

  // A monthly subscription switched to annual at its renewal: the annual period is paid by the renewal, not
  // by the last monthly payment a month before it. A refund of that monthly payment takes back what it paid
  // for (its first period), not the annual months.
  it("takes back only the monthly period of a refunded monthly payment, not the annual period's months", async () => {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const start = new Date(Date.now() - 86_400_000);
    const monthly = addMonths(start, -1);
    const token = checkoutToken(api, user, 'PRO');
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: PRICE.PRO,
      token,
      occurredAt: monthly,
      periodStart: monthly,
      periodEnd: start,
    });
    expect((await deliver(api, created)).outcome).toBe('processed');
    const first = transactionEvent({
      subId,
      origin: 'web',
      priceId: PRICE.PRO,
      total: '1500',
      occurredAt: monthly,
    });
    expect((await deliver(api, first)).outcome).toBe('processed');
    const switched = subscriptionEvent({
      type: 'subscription.updated',
      subId,
      priceId: PRICE.PRO,
      billingCycle: YEARLY,
      token,
      occurredAt: start,
      periodStart: start,
      periodEnd: addMonths(start, 12),
    });
    expect((await deliver(api, switched)).outcome).toBe('processed');
    const renewal = transactionEvent({ subId, priceId: PRICE.PRO, total: String(PAID), occurredAt: start });
    expect((await deliver(api, renewal)).outcome).toBe('processed');
    await job().run(new Date(addMonths(start, 1).getTime() + 3_600_000));
    const month1 = `allowance:${subId}:${start.toISOString()}:1`;
    expect((await row(month1)).delta).toBe(1000);

    const adjId = await refund({ subId, txnId: first.data.id }, { type: 'full', total: 1500 });
    expect(await clawedBackCredits(adjId)).toBe(1000);
    expect(await balance(user.id)).toBe(2000);
  });
});
