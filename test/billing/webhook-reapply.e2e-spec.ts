import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type pg from 'pg';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { REAPPLY_DELAYS_HOURS } from '../../src/modules/webhooks/webhook-inbox.repository.js';
import {
  checkoutToken,
  deliver,
  grants,
  newSubId,
  send,
  subscribe,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { installRowFault, type RowFault } from '../support/row-fault.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const HOUR = 3_600_000;

/**
 * Release 0.2, "converge on the provider's truth by itself": a billing event that failed processing
 * through all its worker attempts (FAILED, claim released, `webhook.failed`) is re-applied automatically
 * a few times over about five days, through the exactly-once path of an operator's replay; a refused
 * payload never is. The worker makes 3 attempts 50 ms apart here (TestEnv).
 */
describe('billing webhooks: automatic re-apply of events that failed for good', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let fault: RowFault;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    worker = await env.startWorker();
    // A database fault on the payments of the listed transactions, until the test lifts it.
    fault = await installRowFault(api.prisma, {
      name: 'reapply_refuse_payment',
      table: 'payments',
      on: 'INSERT',
      key: 'NEW.provider_transaction_id',
    });
  });
  afterAll(() => env.close());

  const inbox = () => worker.get(WebhookInboxService);
  const archived = (eventId: string) =>
    api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'billing', eventId } },
    });
  const untilStatus = (eventId: string, status: string, reapplies?: number) =>
    waitFor(async () => {
      const row = await archived(eventId);
      return row.status === status && (reapplies === undefined || row.autoReapplies === reapplies)
        ? row
        : null;
    }, 15_000);
  const reapplyAudits = (eventId: string) =>
    api.prisma.auditLog.findMany({
      where: { action: 'webhook.replayed', resourceId: eventId },
      orderBy: { createdAt: 'asc' },
    });
  const reappliedCount = async () =>
    (await worker.get(MetricsService).webhookEvents.get()).values.find(
      (v) => v.labels.provider === 'billing' && v.labels.outcome === 'reapplied',
    )?.value ?? 0;

  it('re-applies a renewal that failed for good once its cause is gone, once, without an operator', async () => {
    const { user, subId } = await subscribe(api, 'PRO');
    const renewal = transactionEvent({ subId, origin: 'subscription_recurring', total: '1500' });
    await fault.refuse(renewal.data.id);
    expect((await deliver(api, renewal)).outcome).toBe('failed');
    const failed = await archived(renewal.event_id);
    expect(failed).toMatchObject({ status: 'FAILED', autoReapplies: 0 });
    // Its first re-apply is due an hour after the failure.
    const due = failed.retryAt!.getTime();
    expect(due - Date.now()).toBeGreaterThan(HOUR - 60_000);
    expect(due - Date.now()).toBeLessThanOrEqual(HOUR);
    expect(await inbox().reapplyDue(new Date(due - 1000))).toBe(0);
    // Operators see when (GET /api/v1/admin/webhooks/{id}).
    const admin = await api.bearer('user_reapply_admin', 'admin@example.com');
    const shown = await api.http.get(`/api/v1/admin/webhooks/${failed.id}`).set('Authorization', admin);
    expect(shown.body).toMatchObject({
      status: 'FAILED',
      retry_at: failed.retryAt!.toISOString(),
      auto_reapplies: 0,
    });

    await fault.lift();
    const counted = await reappliedCount();
    expect(await inbox().reapplyDue(new Date(due))).toBe(1);
    const processed = await untilStatus(renewal.event_id, 'PROCESSED');
    expect(processed).toMatchObject({ autoReapplies: 1, retryAt: null });
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([
      `first-period:${subId}`,
      renewal.data.id,
    ]);
    expect((await reapplyAudits(renewal.event_id)).map((a) => [a.actor, a.details])).toEqual([
      [
        'system:webhook-reapply',
        {
          provider: 'billing',
          event_id: renewal.event_id,
          event_type: 'transaction.completed',
          previous_status: 'FAILED',
          source: 'automatic',
          count: 1,
        },
      ],
    ]);
    expect(await reappliedCount()).toBe(counted + 1);
    // Done: nothing is due any more, and the provider's redelivery is a duplicate.
    expect(await inbox().reapplyDue(new Date(Date.now() + 400 * HOUR))).toBe(0);
    expect((await deliver(api, renewal)).outcome).toBe('duplicate');
    expect(await grants(api, user.id)).toHaveLength(2);
  });

  it('takes the claim before the row, as the intake does: a redelivery racing the re-apply never deadlocks', async () => {
    // Review repro: the intake claims, then writes the row; the re-apply locked the row, then claimed (40P01).
    // A gate holds the intake statement between its claim and its row (a trigger on webhook_events).
    const GATE = 777_001;
    await api.prisma.$executeRawUnsafe(
      `CREATE TABLE IF NOT EXISTS reapply_gated (event_id text PRIMARY KEY)`,
    );
    await api.prisma.$executeRawUnsafe(`
      CREATE OR REPLACE FUNCTION reapply_gate_intake() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM reapply_gated WHERE event_id = NEW.event_id;
        IF FOUND THEN PERFORM pg_advisory_xact_lock_shared(${GATE}); END IF;
        RETURN NEW;
      END $$`);
    await api.prisma.$executeRawUnsafe(
      `CREATE OR REPLACE TRIGGER reapply_gate_intake BEFORE INSERT ON webhook_events FOR EACH ROW EXECUTE FUNCTION reapply_gate_intake()`,
    );
    const gate: pg.PoolClient = await api.prisma.pool.connect();
    try {
      const { user, subId } = await subscribe(api, 'PRO');
      const renewal = transactionEvent({ subId, origin: 'subscription_recurring', total: '1500' });
      await fault.refuse(renewal.data.id);
      expect((await deliver(api, renewal)).outcome).toBe('failed');
      const due = (await archived(renewal.event_id)).retryAt!;
      await fault.lift();

      await api.prisma.$executeRawUnsafe(`INSERT INTO reapply_gated VALUES ($1)`, renewal.event_id);
      await gate.query('SELECT pg_advisory_lock($1)', [GATE]);
      // (A supertest request starts when it is awaited or then'd.)
      const delivery = send(api, renewal).then((res) => res);
      // The intake has claimed the event and waits at the gate, before its row.
      await waitFor(async () => {
        const { rows } = await gate.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
          [GATE],
        );
        return rows[0].n > 0 ? true : null;
      }, 10_000);
      const reapply = inbox()
        .reapplyDue(due)
        .then(
          (n) => ({ n }),
          (err: Error) => ({ err: err.message }),
        );
      await new Promise((resolve) => setTimeout(resolve, 500));
      await gate.query('SELECT pg_advisory_unlock($1)', [GATE]);
      const [res, re] = await Promise.all([delivery, reapply]);
      // The redelivery took the event in; the re-apply found its claim taken and left the row to it.
      expect(res.status).toBe(200);
      expect(re).toEqual({ n: 0 });
      expect(await untilStatus(renewal.event_id, 'PROCESSED')).toMatchObject({ autoReapplies: 0 });
      expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([
        `first-period:${subId}`,
        renewal.data.id,
      ]);
    } finally {
      gate.release();
    }
  });

  it(`gives up after ${REAPPLY_DELAYS_HOURS.length} re-applies, spaced 1 h doubling, then waits for an operator`, async () => {
    // A price missing from BILLING_PRICE_TIERS fails every attempt (it would pass once configured).
    const user = await createUser(api.prisma);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      priceId: 'pri_not_configured',
      token: checkoutToken(api, user),
    });
    expect((await deliver(api, created)).outcome).toBe('failed');
    let row = await archived(created.event_id);
    const delays: number[] = [];
    for (let reapply = 1; reapply <= REAPPLY_DELAYS_HOURS.length; reapply += 1) {
      delays.push(Math.round((row.retryAt!.getTime() - Date.now()) / HOUR));
      expect(await inbox().reapplyDue(row.retryAt!)).toBe(1);
      row = await untilStatus(created.event_id, 'FAILED', reapply);
    }
    expect(delays).toEqual([...REAPPLY_DELAYS_HOURS]);
    expect(row.retryAt).toBeNull();
    expect(await inbox().reapplyDue(new Date(Date.now() + 400 * HOUR))).toBe(0);
    expect(
      (await reapplyAudits(created.event_id)).map((a) => (a.details as { count: number }).count),
    ).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Each automatic re-apply that failed is audited like the first failure.
    expect(
      await api.prisma.auditLog.count({ where: { action: 'webhook.failed', resourceId: created.event_id } }),
    ).toBe(REAPPLY_DELAYS_HOURS.length + 1);

    // An operator's replay still runs it (and it fails again: no automatic re-apply is left).
    const replayed = await api.app.get(WebhookInboxService).replay(row.id, 'user:operator');
    expect(replayed).toMatchObject({ status: 'FAILED', outcome: 'failed' });
    expect((await archived(created.event_id)).retryAt).toBeNull();
  });

  it('never re-applies a refused payload, and an operator’s replay takes over a pending re-apply', async () => {
    const { subId } = await subscribe(api, 'PRO');
    const bad = transactionEvent({ subId, total: '15.00' });
    expect((await send(api, bad)).status).toBe(400);
    expect(await archived(bad.event_id)).toMatchObject({ status: 'FAILED', retryAt: null });

    const renewal = transactionEvent({ subId, origin: 'subscription_recurring', total: '1500' });
    await fault.refuse(renewal.data.id);
    expect((await deliver(api, renewal)).outcome).toBe('failed');
    await fault.lift();
    // The operator replays it before its re-apply is due: applied now, and nothing is left due.
    const failed = await archived(renewal.event_id);
    expect(await api.app.get(WebhookInboxService).replay(failed.id, 'user:operator')).toMatchObject({
      status: 'PROCESSED',
    });
    expect(await inbox().reapplyDue(new Date(Date.now() + 400 * HOUR))).toBe(0);
    expect(await archived(bad.event_id)).toMatchObject({ status: 'FAILED', autoReapplies: 0 });
    expect(await archived(renewal.event_id)).toMatchObject({ status: 'PROCESSED', autoReapplies: 0 });
  });
});
