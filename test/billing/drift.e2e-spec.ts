import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { BillingDriftService } from '../../src/modules/billing/jobs/billing-drift.service.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import type { FakeBillingApi } from '../fakes/billing-api.js';
import {
  billingApiWorld,
  checkoutToken,
  DAY,
  deliver,
  grants,
  newSubId,
  subscriptionEvent,
} from '../support/billing.js';
import type { ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const HOUR = 3_600_000;

/**
 * Issue 17 item 2: a subscription whose renewal webhook never came is read back from the provider by the
 * hourly drift check and corrected through the state machine; a provider outage makes the job fail and
 * retry later without harm.
 */
describe('billing drift check', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    ({ env, api, worker, billing } = await billingApiWorld());
  });
  afterAll(() => env.close());

  /** A PRO subscription whose period ended two hours ago, with no event since. */
  async function overdue() {
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const start = new Date(Date.now() - 30 * DAY - 2 * HOUR);
    const end = new Date(Date.now() - 2 * HOUR);
    const created = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token: checkoutToken(api, user, 'PRO', start),
      occurredAt: start,
      periodStart: start,
      periodEnd: end,
    });
    expect((await deliver(api, created)).outcome).toBe('processed');
    return { user, subId, end, created };
  }
  const row = (subId: string) =>
    api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
  const check = () => worker.get(BillingDriftService).check();

  it('applies the renewed period the provider holds, audits billing.reconciled, grants nothing; a repeat is a no-op', async () => {
    const { user, subId, end, created } = await overdue();
    const nextEnd = new Date(end.getTime() + 30 * DAY);
    billing.seedEntity({
      ...created.data,
      status: 'active',
      current_billing_period: { starts_at: end.toISOString(), ends_at: nextEnd.toISOString() },
      updated_at: new Date(end.getTime() + 60_000).toISOString(),
    });
    const result = await check();
    expect(result.reconciled).toBeGreaterThanOrEqual(1);
    expect(await row(subId)).toMatchObject({ status: 'ACTIVE', currentPeriodEnd: nextEnd });
    const [audit] = await api.prisma.auditLog.findMany({
      where: { action: 'billing.reconciled', details: { path: ['subscription_id'], equals: subId } },
    });
    expect(audit).toMatchObject({ actor: 'system:billing-drift' });
    expect(audit.details).toMatchObject({ fields_changed: ['current_period_end'], status: 'ACTIVE' });
    // The state machine's own entry names the drift check too, not a webhook the provider never sent.
    const applied = await api.prisma.auditLog.findMany({
      where: { action: 'subscription.updated', details: { path: ['subscription_id'], equals: subId } },
    });
    expect(applied.map((a) => a.actor)).toEqual(['system:billing-drift']);
    // The renewal's credits come from its transaction (the backfill brings it), never from a synthetic event.
    expect((await grants(api, user.id)).map((g) => g.jobId)).toEqual([`first-period:${subId}`]);
    await check();
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'billing.reconciled', details: { path: ['subscription_id'], equals: subId } },
      }),
    ).toBe(1);
  });

  it('ends access when the provider canceled the subscription after its failed renewal', async () => {
    const { user, subId, created } = await overdue();
    billing.seedEntity({
      ...created.data,
      status: 'canceled',
      current_billing_period: null,
      canceled_at: new Date(Date.now() - HOUR).toISOString(),
      updated_at: new Date(Date.now() - HOUR).toISOString(),
    });
    await check();
    expect(await row(subId)).toMatchObject({ status: 'CANCELED' });
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('FREE');
  });

  it('passes over a subscription the provider does not know (404) and corrects the others', async () => {
    const unknown = await overdue();
    const { subId, end, created } = await overdue();
    const nextEnd = new Date(end.getTime() + 30 * DAY);
    billing.seedEntity({
      ...created.data,
      current_billing_period: { starts_at: end.toISOString(), ends_at: nextEnd.toISOString() },
      updated_at: new Date(end.getTime() + 60_000).toISOString(),
    });
    await check();
    expect((await row(subId)).currentPeriodEnd).toEqual(nextEnd);
    expect((await row(unknown.subId)).currentPeriodEnd).toEqual(unknown.end);
    // Leave nothing overdue for the next test.
    billing.seedEntity({
      ...unknown.created.data,
      status: 'canceled',
      current_billing_period: null,
      updated_at: new Date().toISOString(),
    });
    await check();
  });

  it('fails the run without harm while the provider is down, and corrects on the next run', async () => {
    const { subId, end, created } = await overdue();
    const nextEnd = new Date(end.getTime() + 30 * DAY);
    billing.seedEntity({
      ...created.data,
      current_billing_period: { starts_at: end.toISOString(), ends_at: nextEnd.toISOString() },
      updated_at: new Date(end.getTime() + 60_000).toISOString(),
    });
    billing.failNext(503, Infinity);
    await expect(check()).rejects.toMatchObject({ code: 'billing_unavailable' });
    expect((await row(subId)).currentPeriodEnd).toEqual(end);
    billing.reset();
    await check();
    expect((await row(subId)).currentPeriodEnd).toEqual(nextEnd);
  });

  it('passes over a subscription it cannot reconcile (a price we do not map): counted, the others corrected', async () => {
    const failures = () =>
      worker
        .get(MetricsService)
        .billingDriftFailures.get()
        .then((m) => m.values.find((v) => v.labels.reason === 'unknown_price')?.value ?? 0);
    const before = await failures();
    const subs = [];
    for (let i = 0; i < 5; i += 1) subs.push(await overdue());
    // The provider moved the third to a price BILLING_PRICE_TIERS does not name (UnknownPriceError).
    const renewed = subs.map(({ end, created }, i) => {
      const nextEnd = new Date(end.getTime() + 30 * DAY);
      billing.seedEntity({
        ...created.data,
        items: [
          {
            ...created.data.items[0],
            price: { ...created.data.items[0].price, id: i === 2 ? 'pri_retired' : 'pri_pro' },
          },
        ],
        current_billing_period: { starts_at: end.toISOString(), ends_at: nextEnd.toISOString() },
        updated_at: new Date(end.getTime() + 60_000).toISOString(),
      });
      return nextEnd;
    });
    const result = await check();
    expect(result).toMatchObject({ failed: 1 });
    for (const [i, { subId, end }] of subs.entries()) {
      expect((await row(subId)).currentPeriodEnd).toEqual(i === 2 ? end : renewed[i]);
    }
    expect(await failures()).toBe(before + 1);

    // The scheduled run goes through all of them, then ends failed in job_runs (naming the subscription)
    // without BullMQ retrying it: the next hourly run tries again.
    const queue = worker.get(QueueService);
    const jobId = await queue.add(JOBS.checkBillingDrift, {}, { jobId: `drift-test-${Date.now()}` });
    const run = await waitFor(async () => {
      const found = await api.prisma.jobRun.findUnique({ where: { name: JOBS.checkBillingDrift.name } });
      return found?.lastStatus === 'failed' ? found : null;
    }, 15_000);
    expect(run.lastError).toContain(subs[2].subId);
    expect(run.lastError).toContain('pri_retired');
    const state = await waitFor(async () => {
      const stored = await queue.queue(JOBS.checkBillingDrift.queue).getJob(jobId!);
      return stored && (await stored.isFailed()) ? stored : null;
    }, 15_000);
    expect(state.attemptsMade).toBe(1);

    // Leave nothing failing for the next tests.
    billing.seedEntity({
      ...subs[2].created.data,
      status: 'canceled',
      current_billing_period: null,
      updated_at: new Date().toISOString(),
    });
    expect(await check()).toMatchObject({ failed: 0 });
  });

  for (const kind of ['paused', 'past_due'] as const) {
    it(`reads a ${kind} subscription untouched for a week about once a day, and writes nothing when the provider agrees`, async () => {
      const user = await createUser(api.prisma);
      const subId = newSubId();
      const start = new Date(Date.now() - 40 * DAY);
      const created = subscriptionEvent({
        type: 'subscription.created',
        subId,
        token: checkoutToken(api, user, 'PRO', start),
        occurredAt: start,
        periodStart: start,
        periodEnd: new Date(start.getTime() + 30 * DAY),
      });
      expect((await deliver(api, created)).outcome).toBe('processed');
      const at = new Date(Date.now() - 8 * DAY);
      const event = subscriptionEvent({
        type: `subscription.${kind}`,
        subId,
        status: kind,
        occurredAt: at,
        periodStart: kind === 'paused' ? undefined : new Date(start.getTime() + 30 * DAY),
        periodEnd: kind === 'paused' ? null : new Date(start.getTime() + 60 * DAY),
        pausedAt: kind === 'paused' ? at : null,
      });
      // As Paddle sends them (its payloads carry the links), so the dunning e-mail reads nothing back.
      Object.assign(event.data, {
        management_urls: {
          update_payment_method: 'https://buyer-portal.paddle.com/update',
          cancel: 'https://buyer-portal.paddle.com/cancel',
        },
      });
      expect((await deliver(api, event)).outcome).toBe('processed');
      // The provider holds what the event said, last updated when it happened (a tie with the event).
      billing.seedEntity({ ...event.data, updated_at: at.toISOString() });
      const stored = await row(subId);
      const reads = () =>
        billing.requests.filter((r) => r.method === 'GET' && r.path === `/subscriptions/${subId}`).length;
      // Hourly runs over three days, each starting late in its hour or early in the next (a queue delay):
      // the bucket was counted from the run's own clock, so one run of a day read it twice (or none).
      const base = Math.ceil(Date.now() / HOUR) * HOUR;
      const readAt: number[] = [];
      for (let run = 0; run < 72; run += 1) {
        const clock = new Date(base + run * HOUR + (run % 2 === 0 ? 50 : 10) * 60_000);
        const before = reads();
        await worker.get(BillingDriftService).check(clock);
        if (reads() > before) readAt.push(run);
      }
      // Once a day, in the same hour of the day each time.
      expect(readAt).toHaveLength(3);
      expect(readAt.map((run) => run % 24)).toEqual([readAt[0], readAt[0], readAt[0]]);
      expect(readAt[0]).toBeLessThan(24);
      expect(await row(subId)).toEqual(stored);
      const audits = await api.prisma.auditLog.findMany({
        where: { details: { path: ['subscription_id'], equals: subId } },
      });
      expect(audits.map((a) => `${a.actor} ${a.action}`).sort()).toEqual(
        ['webhook:billing subscription.created', `webhook:billing subscription.${kind}`].sort(),
      );
    });
  }
});
