import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS, QUEUES, scheduledJobs } from '../../src/infra/queue/queues.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const STATS = '/api/v1/admin/stats';
const HOUR = 3_600_000;

describe('GET /admin/stats', () => {
  let env: TestEnv;
  let api: ApiApp;

  // A fresh token per request: tokens live 60 s and a slow run must not outlive them.
  const asAdmin = () => api.bearer('user_admin', 'admin@example.com');

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  const stats = async (app: ApiApp = api) => {
    const res = await app.http.get(STATS).set('Authorization', await asAdmin());
    expect(res.status).toBe(200);
    return res;
  };

  it('counts small tables exactly and big ones from the planner statistics', async () => {
    await api.http.get(STATS).set('Authorization', await asAdmin()); // the admin's own row exists from here on
    await api.prisma.user.createMany({
      data: [1, 2].map((i) => ({ identityUserId: `seed_${i}`, email: `s${i}@example.com` })),
    });
    // A table the planner believes holds 250k rows is not counted row by row.
    await api.prisma.$executeRawUnsafe(`UPDATE pg_class SET reltuples = 250000 WHERE relname = 'feedback'`);

    const { body } = await stats();
    expect(body.tables.users).toEqual({ count: 3, exact: true });
    expect(body.tables.subscriptions).toEqual({ count: 0, exact: true });
    expect(body.tables.feedback).toEqual({ count: 250000, exact: false });
    expect(body.tables._prisma_migrations).toBeUndefined();
    // Every table of the schema is listed.
    for (const table of [
      'audit_logs',
      'credit_transactions',
      'broadcast_recipients',
      'webhook_events',
      'job_runs',
    ]) {
      expect(body.tables[table]).toMatchObject({ exact: true });
    }
  });

  it('reports the webhook archive by status and provider, and failures of the last 24 h', async () => {
    const event = (provider: string, id: string, status: string, receivedAt = new Date()) => ({
      provider,
      eventId: id,
      eventType: 'subscription.created',
      payload: {},
      status: status as 'RECEIVED' | 'PROCESSED' | 'FAILED' | 'SKIPPED',
      receivedAt,
    });
    await api.prisma.webhookEvent.createMany({
      data: [
        event('billing', 'evt_1', 'PROCESSED'),
        event('billing', 'evt_2', 'PROCESSED'),
        event('billing', 'evt_3', 'FAILED', new Date(Date.now() - HOUR)),
        event('billing', 'evt_4', 'FAILED', new Date(Date.now() - 25 * HOUR)),
        event('identity', 'msg_1', 'SKIPPED'),
        event('identity', 'msg_2', 'RECEIVED', new Date(Date.now() - 2 * HOUR)),
        event('billing', 'evt_5', 'SKIPPED', new Date(Date.now() - 26 * HOUR)),
      ],
    });
    const { body } = await stats();
    expect(body.webhooks).toEqual({
      by_status: { received: 1, processed: 2, failed: 2, skipped: 2, total: 7 },
      by_provider: {
        billing: { received: 0, processed: 2, failed: 2, skipped: 1, total: 5 },
        identity: { received: 1, processed: 0, failed: 0, skipped: 1, total: 2 },
      },
      failed_last_24h: 1,
      skipped_last_24h: 1,
      // Accepted but not yet applied by the worker (none runs in this test).
      oldest_unprocessed_at: (
        await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: 'msg_2' } })
      ).receivedAt.toISOString(),
      backfill: { checkpoint: null, last_run_at: null, last_run_processed: null },
    });
  });

  it('lists every scheduled job with its schedule and last run (nulls before the first) and the outbox backlog', async () => {
    const started = new Date('2026-11-01T03:00:00.000Z');
    await api.prisma.jobRun.createMany({
      data: [
        {
          name: JOBS.refreshBlocklist.name,
          lastStartedAt: started,
          lastFinishedAt: new Date(started.getTime() + 1500),
          lastStatus: 'ok',
          lastDurationMs: 1500,
          runs: 12,
        },
        {
          name: JOBS.expireSubscriptions.name,
          lastStartedAt: started,
          lastFinishedAt: new Date(started.getTime() + 20),
          lastStatus: 'failed',
          lastError: 'boom',
          lastDurationMs: 20,
          runs: 3,
        },
        // A row of a job that is no longer scheduled is not a scheduled job.
        { name: 'retired-job', lastStatus: 'ok', runs: 1 },
      ],
    });
    const oldest = new Date(Date.now() - 10 * 60_000);
    await api.prisma.outboxEntry.deleteMany();
    await api.prisma.outboxEntry.createMany({
      data: [
        { queue: 'users', jobName: 'post-signup', jobId: 'ob-1', payload: {}, createdAt: oldest },
        { queue: 'users', jobName: 'post-signup', jobId: 'ob-2', payload: {} },
        { queue: 'users', jobName: 'post-signup', jobId: 'ob-3', payload: {}, dispatchedAt: new Date() },
      ],
    });
    const { body } = await stats();
    // Every cron job of the project, by name, whether it ever ran or not.
    expect(body.scheduled_jobs.map((job: { name: string }) => job.name)).toEqual([
      'billing-backfill',
      'check-billing-drift',
      'expire-subscriptions',
      'grant-allowances',
      'hard-delete-accounts',
      'prune-webhook-archive',
      'reconcile-credits',
      'refresh-blocklist',
      'sweep-broadcasts',
    ]);
    const byName = Object.fromEntries(body.scheduled_jobs.map((job: { name: string }) => [job.name, job]));
    expect(byName['expire-subscriptions']).toEqual({
      name: 'expire-subscriptions',
      schedule: '0 5 * * * *',
      last_status: 'failed',
      last_started_at: started.toISOString(),
      last_finished_at: new Date(started.getTime() + 20).toISOString(),
      last_duration_ms: 20,
      last_error: 'boom',
      runs: 3,
    });
    expect(byName['refresh-blocklist']).toEqual({
      name: 'refresh-blocklist',
      schedule: '0 0 3 * * *',
      last_status: 'ok',
      last_started_at: started.toISOString(),
      last_finished_at: new Date(started.getTime() + 1500).toISOString(),
      last_duration_ms: 1500,
      last_error: null,
      runs: 12,
    });
    for (const [name, schedule] of [
      ['hard-delete-accounts', '0 0 4 * * *'],
      ['prune-webhook-archive', '0 30 2 * * *'],
      ['reconcile-credits', '0 * * * * *'],
    ]) {
      expect(byName[name]).toEqual({
        name,
        schedule,
        last_status: null,
        last_started_at: null,
        last_finished_at: null,
        last_duration_ms: null,
        last_error: null,
        runs: 0,
      });
    }
    // The list is the one the schedulers read their expressions from.
    expect(
      body.scheduled_jobs.map((job: { name: string; schedule: string }) => [job.name, job.schedule]),
    ).toEqual(
      scheduledJobs()
        .map((job) => [job.name, job.schedule])
        .sort(([a], [b]) => a.localeCompare(b)),
    );
    expect(body.outbox).toEqual({ pending: 2, oldest_pending_at: oldest.toISOString() });
  });

  it('reports the depth of every queue and the jobs that failed for good in the last 24 h', async () => {
    const queues = api.app.get(QueueService);
    await queues.add(JOBS.sendEmail, { n: 1 });
    await queues.add(JOBS.sendEmail, { n: 2 });
    await queues.add(JOBS.sendEmail, { n: 3 }, { delay: 3_600_000 });
    // Two maintenance jobs fail for good (one attempt); one of them is then dated 25 h back.
    for (const id of ['fail-1', 'fail-2']) {
      await queues.add(JOBS.relayOutbox, {}, { jobId: id, attempts: 1 });
    }
    const worker = new Worker(
      QUEUES.maintenance,
      async () => {
        throw new Error('expected failure');
      },
      { connection: { url: env.config.redis.url }, prefix: env.config.redis.keyPrefix },
    );
    try {
      const maintenance = queues.queue(QUEUES.maintenance);
      await waitFor(async () => (await maintenance.getFailedCount()) === 2);
    } finally {
      await worker.close();
    }
    const redis = new Redis(env.config.redis.url);
    try {
      const failedKey = queues.queue(QUEUES.maintenance).toKey('failed');
      await redis.zadd(failedKey, Date.now() - 25 * HOUR, 'fail-1');
    } finally {
      redis.disconnect();
    }

    const { body } = await stats();
    expect(body.queues.available).toBe(true);
    expect(body.queues.error).toBeNull();
    expect(Object.keys(body.queues.by_name).sort()).toEqual(Object.values(QUEUES).sort());
    expect(body.queues.by_name.email).toEqual({
      waiting: 2,
      active: 0,
      delayed: 1,
      prioritized: 0,
      waiting_children: 0,
      paused: false,
      failed: 0,
      completed: 0,
      failed_last_24h: 0,
    });
    expect(body.queues.by_name.maintenance).toMatchObject({ failed: 2, failed_last_24h: 1, waiting: 0 });
    expect(body.queues.failed_last_24h).toBe(1);
  });

  it('still answers with the queues marked unavailable when Redis is down', async () => {
    const down = await env.startApi({ config: env.configWith({ REDIS_URL: 'redis://127.0.0.1:1' }) });
    const started = Date.now();
    const { body } = await stats(down);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(body.queues).toEqual({
      available: false,
      error: expect.any(String),
      failed_last_24h: null,
      by_name: null,
    });
    expect(body.tables.users).toMatchObject({ exact: true });
    expect(body.webhooks.by_status.total).toBe(7);
  });

  it('is not cacheable and is refused to non-admins with 403 and an audit entry', async () => {
    const res = await stats();
    expect(res.headers['cache-control']).toBe('no-store');
    const refused = await api.http
      .get(STATS)
      .set('Authorization', await api.bearer('user_plain', 'plain@example.com'));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'admin_required' });
    const entries = await api.prisma.auditLog.findMany({
      where: { action: 'admin.unauthorized', userId: 'user_plain' },
    });
    expect(entries).toHaveLength(1);
    expect(String((entries[0].details as Record<string, unknown>).path)).toContain('admin/stats');
  });
});
