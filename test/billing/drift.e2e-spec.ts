import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { BillingDriftService } from '../../src/modules/billing/jobs/billing-drift.service.js';
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
});
