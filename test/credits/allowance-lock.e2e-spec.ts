import { createUser } from '../factories/user.factory.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { addMonths } from '../../src/modules/billing/jobs/allowance-months.js';
import { AllowanceService } from '../../src/modules/billing/jobs/allowance.service.js';
import {
  adjustmentEvent,
  checkoutToken,
  deliver,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

// The hourly allowance job against the webhooks that change what it grants (docs/decisions/billing.md,
// "Ordering and concurrency"). One transaction is held open by a gate: a trigger on the ledger insert of a
// chosen job id, or on the audit entry of a chosen event, waits for an advisory lock the test holds, and the
// test lets it go once the other side has done (or is waiting for) its work. No sleeps: the test polls for the
// waiting backend. Rollover `full` (the default), so no expiry row blurs the sums; PRO grants 1000 a month.

const GATE_KEY = 4_242_017;
const ANNUAL = { interval: 'year', frequency: 1 };

describe('allowance job under the subscription lock', () => {
  let env: TestEnv;
  let api: ApiApp;
  let gate: pg.PoolClient;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    await env.startWorker();
    await api.prisma.$executeRawUnsafe(`CREATE TABLE test_gated_jobs (job_id text PRIMARY KEY)`);
    await api.prisma.$executeRawUnsafe(`
      CREATE FUNCTION test_gate_job() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM test_gated_jobs WHERE job_id = NEW.job_id;
        IF FOUND THEN PERFORM pg_advisory_xact_lock_shared(${GATE_KEY}); END IF;
        RETURN NEW;
      END $$`);
    await api.prisma.$executeRawUnsafe(
      `CREATE TRIGGER test_gate_job BEFORE INSERT ON credit_transactions FOR EACH ROW EXECUTE FUNCTION test_gate_job()`,
    );
    // The same gate on a webhook's audit entry (keyed by its event id), written inside its transaction.
    await api.prisma.$executeRawUnsafe(`
      CREATE FUNCTION test_gate_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM test_gated_jobs WHERE job_id = NEW.details->>'event_id';
        IF FOUND THEN PERFORM pg_advisory_xact_lock_shared(${GATE_KEY}); END IF;
        RETURN NEW;
      END $$`);
    await api.prisma.$executeRawUnsafe(
      `CREATE TRIGGER test_gate_event BEFORE INSERT ON audit_logs FOR EACH ROW EXECUTE FUNCTION test_gate_event()`,
    );
    gate = await api.prisma.pool.connect();
  });
  afterEach(async () => {
    await expectLedgerConsistent(api.prisma, { allowNegative: true });
  });
  afterAll(async () => {
    gate?.release();
    await env.close();
  });

  /**
   * Holds the ledger insert of `jobId`, or the audit entry of the webhook whose event id it is (in whatever
   * transaction writes it), until the returned release.
   */
  async function closeGate(jobId: string): Promise<() => Promise<void>> {
    await api.prisma.$executeRaw`INSERT INTO test_gated_jobs (job_id) VALUES (${jobId})`;
    await gate.query('SELECT pg_advisory_lock($1)', [GATE_KEY]);
    return async () => {
      await gate.query('SELECT pg_advisory_unlock($1)', [GATE_KEY]);
    };
  }

  /** Resolves once `count` backends of this database wait for a lock (the gate, a row or an advisory lock). */
  const waiting = (count: number) =>
    waitFor(async () => {
      const [row] = await api.prisma.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      return row.n >= count;
    }, 15_000);

  const ledger = async (userId: string) =>
    (await api.prisma.creditTransaction.findMany({ where: { userId } }))
      .map((r) => `${r.kind}:${r.jobId}=${r.delta}`)
      .sort();

  /** An annual PRO subscription started a day ago, with its first payment recorded. */
  async function annual() {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const start = new Date(Date.now() - 86_400_000);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      priceId: PRICE.PRO,
      token: checkoutToken(api, user, 'PRO'),
      occurredAt: start,
      periodStart: start,
      periodEnd: addMonths(start, 12),
    });
    created.data.billing_cycle = ANNUAL;
    created.data.items[0].price.billing_cycle = ANNUAL;
    expect((await deliver(api, created)).outcome).toBe('processed');
    const payment = transactionEvent({ subId, origin: 'web', priceId: PRICE.PRO, total: '18000' });
    expect((await deliver(api, payment)).outcome).toBe('processed');
    const row = await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
    return { user, subId, start, payment, id: row.id };
  }

  const month = (subId: string, start: Date, index: number) =>
    `allowance:${subId}:${start.toISOString()}:${index}`;

  it('grants nothing to a subscription canceled (and so expired), or paused, after the job read its page', async () => {
    // The job pages in id order: the first one's grant is held while the later two change under it.
    const [held, canceled, paused] = (await Promise.all([annual(), annual(), annual()])).sort((a, b) =>
      a.id < b.id ? -1 : 1,
    );
    const clock = new Date(addMonths(held.start, 1).getTime() + 3_600_000);
    const release = await closeGate(month(held.subId, held.start, 1));
    const run = api.app.get(AllowanceService).run(clock);
    try {
      await waiting(1);
      const ended = subscriptionEvent({
        type: 'subscription.canceled',
        subId: canceled.subId,
        status: 'canceled',
        priceId: PRICE.PRO,
        periodEnd: null,
        canceledAt: new Date(),
      });
      ended.data.billing_cycle = ANNUAL;
      ended.data.items[0].price.billing_cycle = ANNUAL;
      expect((await deliver(api, ended)).outcome).toBe('processed');
      // Canceled immediately: the webhook itself ends its access (expired_at).
      expect(await api.prisma.subscription.findUniqueOrThrow({ where: { id: canceled.id } })).toMatchObject({
        status: 'CANCELED',
        expiredAt: expect.any(Date),
      });
      const pause = subscriptionEvent({
        type: 'subscription.paused',
        subId: paused.subId,
        status: 'paused',
        priceId: PRICE.PRO,
        periodEnd: null,
        pausedAt: new Date(),
      });
      pause.data.billing_cycle = ANNUAL;
      pause.data.items[0].price.billing_cycle = ANNUAL;
      expect((await deliver(api, pause)).outcome).toBe('processed');
    } finally {
      await release();
    }
    expect(await run).toMatchObject({ granted: 1, credits: 1000 });
    expect(await ledger(held.user.id)).toEqual([
      `grant:${month(held.subId, held.start, 1)}=1000`,
      `grant:first-period:${held.subId}=1000`,
    ]);
    for (const { user, subId } of [canceled, paused]) {
      expect({ subId, ledger: await ledger(user.id) }).toEqual({
        subId,
        ledger: [`grant:first-period:${subId}=1000`],
      });
    }
  });

  it('waits for a cancellation applied under the subscription lock, then grants nothing', async () => {
    const { user, subId, start } = await annual();
    const clock = new Date(addMonths(start, 1).getTime() + 3_600_000);
    const ended = subscriptionEvent({
      type: 'subscription.canceled',
      subId,
      status: 'canceled',
      priceId: PRICE.PRO,
      periodEnd: null,
      canceledAt: new Date(),
    });
    ended.data.billing_cycle = ANNUAL;
    ended.data.items[0].price.billing_cycle = ANNUAL;
    // The webhook's transaction has applied the cancellation but not committed it when the job comes.
    const release = await closeGate(ended.event_id);
    const applied = deliver(api, ended);
    let run: Promise<unknown> | undefined;
    try {
      await waiting(1);
      run = api.app.get(AllowanceService).run(clock);
      // The job waits for the webhook's transaction (or, without a lock to wait for, is done already).
      await Promise.race([waiting(2), run]);
    } finally {
      await release();
    }
    expect((await applied).outcome).toBe('processed');
    expect(await run).toMatchObject({ granted: 0 });
    expect(await ledger(user.id)).toEqual([`grant:first-period:${subId}=1000`]);
  });

  // The grant's user-row lock already ordered these two before the job took the subscription's lock; this
  // holds the order (subscription, transaction, user row on the refund's side; subscription, user row on the
  // job's) free of deadlock and the month counted by the refund that comes second.
  it("takes back a month whose grant was still open when the annual payment's refund came", async () => {
    const { user, subId, start, payment } = await annual();
    const clock = new Date(addMonths(start, 1).getTime() + 3_600_000);
    const release = await closeGate(month(subId, start, 1));
    const run = api.app.get(AllowanceService).run(clock);
    const refund = adjustmentEvent({
      adjId: `adj_${randomUUID().slice(0, 12)}`,
      txnId: payment.data.id,
      subId,
      status: 'approved',
      total: '18000',
    });
    let refunded: ReturnType<typeof deliver> | undefined;
    try {
      await waiting(1);
      refunded = deliver(api, refund);
      // The refund's transaction now waits for the job's (the subscription's lock, or the user row's).
      await waiting(2);
    } finally {
      await release();
    }
    expect(await run).toMatchObject({ granted: 1 });
    expect((await refunded!).outcome).toBe('processed');
    expect(await ledger(user.id)).toEqual(
      [
        `clawback:${refund.data.id}=-2000`,
        `grant:${month(subId, start, 1)}=1000`,
        `grant:first-period:${subId}=1000`,
      ].sort(),
    );
    // The subscription runs on: the next month of the refunded period grants nothing, and takes nothing twice.
    await api.app.get(AllowanceService).run(new Date(addMonths(start, 2).getTime() + 3_600_000));
    expect(await ledger(user.id)).toEqual(
      [
        `clawback:${refund.data.id}=-2000`,
        `grant:${month(subId, start, 1)}=1000`,
        `grant:${month(subId, start, 2)}=0`,
        `grant:first-period:${subId}=1000`,
      ].sort(),
    );
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).creditBalance).toBe(0);
  });

  // The other order: the refund holds the subscription's lock when the month comes due (its transaction has
  // recorded the adjustment and waits at the adjustment's own audit entry, written before its claw-back takes
  // the first period back). The job waits for it, then reads the refund.
  it("waits for an annual payment's refund applied under the subscription lock, then grants nothing", async () => {
    const { user, subId, start, payment } = await annual();
    const clock = new Date(addMonths(start, 1).getTime() + 3_600_000);
    const refund = adjustmentEvent({
      adjId: `adj_${randomUUID().slice(0, 12)}`,
      txnId: payment.data.id,
      subId,
      status: 'approved',
      total: '18000',
    });
    const release = await closeGate(refund.event_id);
    const refunded = deliver(api, refund);
    let run: Promise<unknown> | undefined;
    try {
      await waiting(1);
      run = api.app.get(AllowanceService).run(clock);
      // The job waits for the refund's transaction (or, without a lock to wait for, is done already).
      await Promise.race([waiting(2), run]);
    } finally {
      await release();
    }
    expect((await refunded).outcome).toBe('processed');
    await run;
    expect(await ledger(user.id)).toEqual(
      [
        `clawback:${refund.data.id}=-1000`,
        `grant:${month(subId, start, 1)}=0`,
        `grant:first-period:${subId}=1000`,
      ].sort(),
    );
    const [granted] = await api.prisma.creditTransaction.findMany({
      where: { userId: user.id, jobId: month(subId, start, 1) },
    });
    expect(granted.details).toMatchObject({ reason: 'payment_refunded', withheld: 1000 });
  });
});
