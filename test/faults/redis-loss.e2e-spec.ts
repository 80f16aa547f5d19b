import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { User } from '../../src/generated/prisma/client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { createAudience } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { startWorkerProcess, type WorkerProcess } from './fault-helpers.js';

/**
 * Deletes every key of this test's prefix in one atomic script: what a Redis restarted without its data
 * (no AOF, failover to an empty replica) looks like to this deployment. Other test files share the server
 * under their own prefixes, so the server itself is never flushed.
 */
const WIPE = `
local cursor = '0'
local deleted = 0
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    redis.call('DEL', key)
    deleted = deleted + 1
  end
until cursor == '0'
return deleted`;

/**
 * Redis loses everything while jobs are queued and a broadcast is half sent. PostgreSQL keeps what was
 * committed; the outbox relay and the broadcast sweep put the lost work back, and nothing is done twice.
 */
describe('fault injection: Redis restarted empty', () => {
  let env: TestEnv;
  let api: ApiApp;
  let mail: FakeEmailApi;
  let worker: WorkerProcess;
  let redis: Redis;
  let queues: QueueService;
  let admin: string;
  let audience: User[];

  const wipeRedis = async () => {
    const deleted = (await redis.eval(WIPE, 0, `${env.config.redis.keyPrefix}:*`)) as number;
    expect(deleted).toBeGreaterThan(0);
    expect(await redis.keys(`${env.config.redis.keyPrefix}:*`)).toEqual([]);
  };

  beforeAll(async () => {
    mail = await FakeEmailApi.start();
    env = await TestEnv.create({
      // One attempt of 2 s per e-mail request: a send whose answer never comes fails the delivery fast.
      env: { ...mail.env(), HTTP_TIMEOUT_MS: '2000', EMAIL_SEND_RETRIES: '0' },
    });
    env.onClose(() => mail.close());
    redis = new Redis(env.config.redis.url);
    env.onClose(async () => {
      redis.disconnect();
    });
    api = await env.startApi();
    queues = api.app.get(QueueService);
    // Made directly in the database: no signup e-mails of their own.
    await createUser(api.prisma, { identityUserId: 'user_admin', email: 'admin@example.com' });
    admin = await api.bearer('user_admin', 'admin@example.com');
    audience = await createAudience(api.prisma, 'loss', 250, { consent: true, tier: 'TEAM' });
  });
  afterAll(() => env.close());

  it('sends a welcome e-mail whose queued job Redis lost', async () => {
    // No worker yet: the signup's post-signup job (which sends the welcome e-mail) waits in Redis.
    const me = await api.http
      .get('/api/v1/me')
      .set('Authorization', await api.bearer('user_welcome', 'welcome@example.com'));
    expect(me.status).toBe(200);
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_welcome' } });
    const jobId = `post-signup-${user.id}`;
    const entry = () => api.prisma.outboxEntry.findUniqueOrThrow({ where: { jobId } });
    await waitFor(async () => (await entry()).dispatchedAt !== null, 5000);
    expect(await queues.queue('users').getJobState(jobId)).toBe('waiting');

    await wipeRedis();
    expect(await queues.queue('users').getJobState(jobId)).toBe('unknown');

    // The worker's relay (every 10 s) finds the dispatched entry's job gone and pushes it again.
    worker = await startWorkerProcess(env);
    await waitFor(async () => mail.deliveredTo('welcome@example.com').length === 1, 30_000, 100);
    // The next pass sees the job completed and closes the entry; nothing is sent again.
    await waitFor(async () => (await entry()).completedAt !== null, 30_000, 200);
    expect((await entry()).attempts).toBe(2);
    expect(mail.deliveredTo('welcome@example.com')).toHaveLength(1);
    expect(
      await api.prisma.emailMessage.count({
        where: { userId: user.id, templateKey: 'welcome', status: 'sent' },
      }),
    ).toBe(1);
  }, 90_000);

  it('finishes a broadcast whose job Redis lost mid-run, mailing every recipient exactly once', async () => {
    mail.reset();
    // The worker process runs the real cron, which enqueues the sweep at second 30 of every minute: keep
    // that tick out of the few seconds in which the test shows the run stuck.
    while (new Date().getUTCSeconds() >= 20 && new Date().getUTCSeconds() <= 31) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // The first batch is answered; the second is delivered but its answer never comes.
    mail.hangAfter(1);
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience: { tiers: ['TEAM'] } });
    expect(res.status).toBe(201);
    const runId = res.body.id as string;
    const run = () => api.prisma.broadcastRun.findUniqueOrThrow({ where: { id: runId } });
    await waitFor(async () => mail.hungCount === 1, 20_000, 50);
    expect(await run()).toMatchObject({ status: 'running', sentCount: 100, recipientsTotal: 250 });

    await wipeRedis();
    // An outbox entry already closed or pruned (e.g. written before this release): only the sweep can
    // find the run now.
    await api.prisma.outboxEntry.delete({ where: { jobId: `broadcast-${runId}` } });
    mail.stopHanging();
    // The hung send times out and the delivery gives up; the retry BullMQ would schedule is lost with
    // the job. The run stays `running` at 100 of 250, the second batch reserved (pending).
    await waitFor(async () => worker.stdout().includes('provider request failed'), 15_000, 100);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await run()).toMatchObject({ status: 'running', sentCount: 100 });
    expect(await queues.queue('broadcasts').getJobState(`broadcast-${runId}`)).toBe('unknown');

    // The sweep's cron enqueues this every minute (at :30); the test enqueues the tick now.
    await queues.add(JOBS.sweepBroadcasts, {}, { jobId: 'sweep-broadcasts-now' });
    const done = await waitFor(async () => {
      const current = await run();
      return current.status === 'done' ? current : null;
    }, 30_000);
    expect(done).toMatchObject({ sentCount: 250, failedCount: 0, skippedCount: 0, recipientsTotal: 250 });

    // Every member exactly once: the batch whose answer was lost was resent under its key and answered
    // from the provider's idempotency record.
    const perAddress = new Map<string, number>();
    for (const d of mail.deliveries) perAddress.set(d.to, (perAddress.get(d.to) ?? 0) + 1);
    expect(new Set(perAddress.keys())).toEqual(new Set(audience.map((m) => m.email)));
    expect([...perAddress.values()].every((n) => n === 1)).toBe(true);
    const keys = mail.requests.map((r) => r.headers['idempotency-key']);
    expect(keys.filter((k) => k === keys[1]).length).toBeGreaterThanOrEqual(2);
    expect(await api.prisma.broadcastRecipient.count({ where: { runId, status: 'sent' } })).toBe(250);
    expect(
      await api.prisma.auditLog.count({ where: { action: 'broadcast.finished', resourceId: runId } }),
    ).toBe(1);
    expect(await api.prisma.jobRun.findUnique({ where: { name: JOBS.sweepBroadcasts.name } })).toMatchObject({
      lastStatus: 'ok',
    });
  }, 90_000);
});
