import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS, tickJobId } from '../../src/infra/queue/queues.js';
import { SubscriptionExpiryService } from '../../src/modules/billing/jobs/subscription-expiry.service.js';
import { WebhookRetentionService } from '../../src/modules/webhooks/webhook-retention.service.js';
import { checkoutToken, DAY, deliver, newSubId, PRICE, subscriptionEvent } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('billing jobs: subscription expiry and webhook archive retention', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;

  beforeAll(async () => {
    env = await TestEnv.create({
      env: { PROCESSED_WEBHOOK_RETENTION_DAYS: '120' },
    });
    api = await env.startApi();
    worker = await env.startWorker();
  });
  afterAll(() => env.close());

  const tierOf = async (userId: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })).currentTier;

  /** A subscription driven into a state by webhooks, `ago` milliseconds in the past. */
  async function inState(
    type: 'subscription.canceled' | 'subscription.past_due' | 'subscription.paused',
    status: 'canceled' | 'past_due' | 'paused',
    periodEnd: Date | null,
    extra: { pausedAt?: Date; tier?: 'PRO' | 'TEAM' } = {},
  ) {
    const tier = extra.tier ?? 'PRO';
    const user = await createUser(api.prisma);
    const subId = newSubId();
    const start = new Date(Date.now() - 60 * DAY);
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE[tier],
        token: checkoutToken(api, user, tier, new Date(start.getTime() - 1000)),
        occurredAt: start,
      }),
    );
    await deliver(
      api,
      subscriptionEvent({
        type,
        subId,
        status,
        priceId: PRICE[tier],
        periodEnd,
        pausedAt: extra.pausedAt ?? null,
        canceledAt: status === 'canceled' ? start : null,
        occurredAt: new Date(start.getTime() + 1000),
      }),
    );
    return { user, subId };
  }

  it('downgrades a CANCELED subscription whose period ended, never PAUSED or PAST_DUE however old, audits once', async () => {
    const now = Date.now();
    const endedCancel = await inState('subscription.canceled', 'canceled', new Date(now + 2 * DAY), {
      tier: 'TEAM',
    });
    const runningCancel = await inState('subscription.canceled', 'canceled', new Date(now + 5 * DAY));
    const pastDueLong = await inState('subscription.past_due', 'past_due', new Date(now - 40 * DAY));
    const pastDueShort = await inState('subscription.past_due', 'past_due', new Date(now - 1 * DAY));
    const pausedLong = await inState('subscription.paused', 'paused', null, {
      pausedAt: new Date(now - 50 * DAY),
    });
    const pausedShort = await inState('subscription.paused', 'paused', null, {
      pausedAt: new Date(now - 1 * DAY),
    });
    for (const s of [endedCancel, runningCancel, pastDueLong, pastDueShort, pausedLong, pausedShort]) {
      expect(await tierOf(s.user.id)).not.toBe('FREE');
    }

    // Three days later the first cancellation's paid period is over. The state table: a paused
    // subscription's "tier is NOT downgraded" and a past_due one's "access is NOT revoked"; the provider
    // ends those with subscription.canceled.
    const expiry = api.app.get(SubscriptionExpiryService);
    const result = await expiry.expireLapsed(new Date(now + 3 * DAY));
    expect(result.expired).toBe(1);
    expect(await tierOf(endedCancel.user.id)).toBe('FREE');
    for (const s of [runningCancel, pastDueLong, pastDueShort, pausedLong, pausedShort]) {
      expect(await tierOf(s.user.id)).toBe('PRO');
    }
    for (const s of [pastDueLong, pausedLong]) {
      const row = await api.prisma.subscription.findUniqueOrThrow({
        where: { providerSubscriptionId: s.subId },
      });
      expect(row.expiredAt).toBeNull();
    }

    const audits = await api.prisma.auditLog.findMany({ where: { action: 'subscription.expired' } });
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({
      actor: 'system:subscription-expiry',
      userId: endedCancel.user.identityUserId,
    });
    expect(audits[0].details).toMatchObject({
      reason: 'canceled_period_ended',
      previous_tier: 'TEAM',
      tier: 'FREE',
      subscription_id: endedCancel.subId,
    });

    // A year on, still nothing for the paused and past_due ones.
    expect((await expiry.expireLapsed(new Date(now + 365 * DAY))).expired).toBe(1); // runningCancel's period ended
    expect(await tierOf(pastDueLong.user.id)).toBe('PRO');
    expect(await tierOf(pausedLong.user.id)).toBe('PRO');
    expect(await api.prisma.auditLog.count({ where: { action: 'subscription.expired' } })).toBe(2);
  });

  it('a long past_due subscription keeps its tier until the provider cancels it', async () => {
    const now = Date.now();
    const { user, subId } = await inState('subscription.past_due', 'past_due', new Date(now - 30 * DAY));
    await api.app.get(SubscriptionExpiryService).expireLapsed(new Date(now));
    expect(await tierOf(user.id)).toBe('PRO');
    await deliver(
      api,
      subscriptionEvent({
        type: 'subscription.canceled',
        subId,
        status: 'canceled',
        periodEnd: null,
        canceledAt: new Date(now),
      }),
    );
    expect(await tierOf(user.id)).toBe('FREE');
    expect(
      (await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } }))
        .expiredAt,
    ).not.toBeNull();
  });

  it('runs hourly through the worker: one job per tick, recorded in job_runs', async () => {
    const { user } = await inState('subscription.canceled', 'canceled', new Date(Date.now() - 1000));
    // The cancellation webhook already ended access (period over): expiry finds nothing left for it.
    expect(await tierOf(user.id)).toBe('FREE');
    const periodEnd = new Date(Date.now() + 1500);
    const lapsed = await inState('subscription.canceled', 'canceled', periodEnd);
    expect(await tierOf(lapsed.user.id)).toBe('PRO');
    await new Promise((resolve) => setTimeout(resolve, periodEnd.getTime() - Date.now() + 50));
    const queues = worker.get(QueueService);
    const jobId = tickJobId(JOBS.expireSubscriptions, new Date(), 'hour');
    await queues.add(JOBS.expireSubscriptions, {}, { jobId });
    await queues.add(JOBS.expireSubscriptions, {}, { jobId });
    const run = await waitFor(async () => {
      const row = await api.prisma.jobRun.findUnique({ where: { name: JOBS.expireSubscriptions.name } });
      return row?.lastStatus === 'ok' ? row : null;
    }, 15_000);
    expect(run.runs).toBe(1);
    expect(await tierOf(lapsed.user.id)).toBe('FREE');
  });

  it('prunes archive rows past 90 days and keeps dedupe records for their own retention', async () => {
    const now = Date.now();
    const rows = [
      { eventId: 'evt_old', receivedAt: new Date(now - 91 * DAY), status: 'PROCESSED' as const },
      { eventId: 'evt_recent', receivedAt: new Date(now - 89 * DAY), status: 'PROCESSED' as const },
      // Accepted and never applied: still the worker's to-do, kept whatever its age.
      { eventId: 'evt_waiting', receivedAt: new Date(now - 91 * DAY), status: 'RECEIVED' as const },
    ];
    for (const row of rows) {
      await api.prisma.webhookEvent.create({
        data: {
          provider: 'billing',
          eventId: row.eventId,
          eventType: 'subscription.updated',
          payload: {},
          status: row.status,
          receivedAt: row.receivedAt,
        },
      });
    }
    await api.prisma.processedWebhookEvent.createMany({
      data: [
        {
          provider: 'billing',
          eventId: 'evt_old',
          eventType: 'subscription.updated',
          processedAt: new Date(now - 91 * DAY),
        },
        {
          provider: 'billing',
          eventId: 'evt_ancient',
          eventType: 'subscription.updated',
          processedAt: new Date(now - 121 * DAY),
        },
      ],
    });
    const result = await worker.get(WebhookRetentionService).prune(new Date(now));
    expect(result).toEqual({ archive: 1, processed: 1 });
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: 'evt_old' } })).toBeNull();
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: 'evt_recent' } })).not.toBeNull();
    expect(await api.prisma.webhookEvent.findFirst({ where: { eventId: 'evt_waiting' } })).not.toBeNull();
    // The payload is gone but the id still dedupes a late replay.
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: 'evt_old' } })).toBe(1);
    expect(await api.prisma.processedWebhookEvent.count({ where: { eventId: 'evt_ancient' } })).toBe(0);

    await worker
      .get(QueueService)
      .add(JOBS.pruneWebhookArchive, {}, { jobId: tickJobId(JOBS.pruneWebhookArchive, new Date(), 'day') });
    await waitFor(
      async () =>
        (await api.prisma.jobRun.findUnique({ where: { name: JOBS.pruneWebhookArchive.name } }))
          ?.lastStatus === 'ok',
      15_000,
    );
  });
});
