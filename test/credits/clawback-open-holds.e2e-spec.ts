import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { addMonths } from '../../src/modules/billing/jobs/allowance-months.js';
import { MeteredCreditsService } from '../../src/modules/credits/metered-credits.service.js';
import { createUser } from '../factories/user.factory.js';
import { adjust, annualPeriod } from '../support/annual.js';
import {
  checkoutToken,
  deliver,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

// A metered call's reservation open while a claw-back of its allowance's payment runs
// (docs/decisions/credits.md, "a reservation open across a claw-back of its closed allowance" and "a
// claw-back's split and calls in flight"): the balance is the same whichever closes first. PRO: 1000 a
// month, rollover none.

describe('reservations open across a claw-back', () => {
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
  const metered = () => api.app.get(MeteredCreditsService);
  const rows = async (userId: string) =>
    (await api.prisma.creditTransaction.findMany({ where: { userId }, orderBy: { createdAt: 'asc' } })).map(
      (r) => `${r.kind}:${r.delta}`,
    );

  /** Monthly PRO: first period, then renewal T1 (closes it: 1000 live of T1), 400 spent of T1. */
  async function renewedPro() {
    const u = await createUser(api.prisma);
    const subId = newSubId();
    const start = new Date(Date.now() - 86_400_000);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: PRICE.PRO,
      token: checkoutToken(api, u, 'PRO'),
      occurredAt: start,
      periodStart: start,
      periodEnd: addMonths(start, 1),
    });
    expect((await deliver(api, created)).outcome).toBe('processed');
    const t1 = transactionEvent({ subId, priceId: PRICE.PRO, total: '1500' });
    expect((await deliver(api, t1)).outcome).toBe('processed');
    expect(await balance(u.id)).toBe(1000);
    const spent = await metered().reserve({ userId: u.id, amount: 400, jobId: `ai-${randomUUID()}` });
    await metered().settle(spent.spend.jobId, 400);
    return { user: u, subId, t1: t1.data.id };
  }

  // Control (the order of the existing audit test): the held 600 come back and expire before the refund of
  // T1, which then takes the 400 spent: 600 of T2 left.
  // Finding: the same events with the refund of T1 landing while the call is still in flight.
  it.each([
    ['control: hold closed, then refund', 'control'],
    ['refund after the renewal, hold closed last', 'after-close'],
    ['refund before the renewal, hold closed last', 'before-close'],
  ])('full refund of the closed allowance’s payment, %s: 600 of T2 left', async (_name, order) => {
    const { user: u, subId, t1 } = await renewedPro();
    const open = await metered().reserve({ userId: u.id, amount: 600, jobId: `ai-${randomUUID()}` });
    const refund = () => adjust(api, { subId, txnId: t1 }, { type: 'full', total: 1500 });
    if (order === 'before-close') await refund();
    const t2 = transactionEvent({ subId, priceId: PRICE.PRO, total: '1500' });
    expect((await deliver(api, t2)).outcome).toBe('processed');
    if (order === 'after-close') await refund();
    await metered().refund(open.spend.jobId, 'provider_failed');
    if (order === 'control') await refund();
    const ledger = await rows(u.id);
    expect([order, await balance(u.id), ledger.join(' ')]).toEqual([order, 600, ledger.join(' ')]);
  });

  // The same with the call settled at 100 (500 given back): the refund takes the 100 charged too, in every
  // order: 500 of T2 left.
  it.each([['control'], ['after-close'], ['before-close']])(
    'full refund of the closed allowance’s payment with the call settled at 100, %s: 500 left',
    async (order) => {
      const { user: u, subId, t1 } = await renewedPro();
      const open = await metered().reserve({ userId: u.id, amount: 600, jobId: `ai-${randomUUID()}` });
      const refund = () => adjust(api, { subId, txnId: t1 }, { type: 'full', total: 1500 });
      if (order === 'before-close') await refund();
      const t2 = transactionEvent({ subId, priceId: PRICE.PRO, total: '1500' });
      expect((await deliver(api, t2)).outcome).toBe('processed');
      if (order === 'after-close') await refund();
      await metered().settle(open.spend.jobId, 100);
      if (order === 'control') await refund();
      const ledger = await rows(u.id);
      expect([order, await balance(u.id), ledger.join(' ')]).toEqual([order, 500, ledger.join(' ')]);
    },
  );

  // Control: the call failed and its 600 came back before the chargeback: all 1000 of month 0 were unspent
  // when it was taken, month 0 closed under `none`, the won chargeback gives nothing back (balance 0).
  // Finding: the call fails just after the chargeback: its 600 came back to the user once already (the
  // refund row filled the hole the claw-back made), and the won chargeback gives them back a second time.
  it.each([
    ['control: hold refunded before the chargeback', 'before'],
    ['hold refunded after the chargeback', 'after'],
  ])('won chargeback after month 0 closed, %s', async (_name, order) => {
    const sub = await annualPeriod(api, { total: 18_000 });
    const open = await metered().reserve({ userId: sub.user.id, amount: 600, jobId: `ai-${randomUUID()}` });
    if (order === 'before') await metered().refund(open.spend.jobId, 'provider_failed');
    await adjust(api, sub, { type: 'full', total: 18_000, action: 'chargeback' });
    if (order === 'after') await metered().refund(open.spend.jobId, 'provider_failed');
    expect(await balance(sub.user.id)).toBe(0);
    await sub.runAt(1);
    await adjust(api, sub, { type: 'full', total: 18_000, action: 'chargeback_reverse' });
    const ledger = await rows(sub.user.id);
    expect([order, await balance(sub.user.id), ledger.join(' ')]).toEqual([order, 0, ledger.join(' ')]);
  });

  // A first won chargeback whose restore gave nothing (its credits would have expired) writes no row, so a
  // later chargeback of the same payment, never reversed, is "restored" under the first reverse's key.
  it('a second chargeback is not given back by the first one’s reverse', async () => {
    const sub = await annualPeriod(api, { total: 18_000 });
    await adjust(api, sub, { type: 'partial', total: 9000, action: 'chargeback' });
    await sub.runAt(1);
    const reverse = await adjust(api, sub, { type: 'partial', total: 9000, action: 'chargeback_reverse' });
    const before = await balance(sub.user.id);
    const second = await adjust(api, sub, { type: 'partial', total: 4500, action: 'chargeback' });
    const taken = (
      await api.prisma.billingAdjustment.findUniqueOrThrow({ where: { providerAdjustmentId: second } })
    ).clawedBackCredits;
    const given = await api.prisma.creditTransaction.findUnique({
      where: { jobId_kind: { jobId: reverse, kind: 'clawback' } },
    });
    const ledger = await rows(sub.user.id);
    expect({ before, taken, given: given?.delta ?? null, after: await balance(sub.user.id), ledger }).toEqual(
      {
        before,
        taken,
        given: null,
        after: before - (taken ?? 0),
        ledger,
      },
    );
  });
});
