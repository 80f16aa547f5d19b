import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Logger } from 'nestjs-pino';
import { WorkerModule } from '../../src/app/worker.module.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { dueTick } from '../../src/infra/queue/due-tick.js';
import { OUTAGE_MARK } from '../../src/infra/queue/job-failure.js';
import { JobRunRecorder } from '../../src/infra/queue/job-run.recorder.js';
import { JobScheduler } from '../../src/infra/queue/job-scheduler.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import {
  type JobDef,
  JOBS,
  SCHEDULES,
  type ScheduledJobKey,
  tickJobId,
} from '../../src/infra/queue/queues.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { freePort } from '../support/processes.js';
import { TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { directDb } from './fault-helpers.js';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const ALL_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed'] as const;
/**
 * The tick's own push in the outage test: two attempts 100 ms apart instead of the production five from
 * 2 s, the same "every attempt failed" end in a second (as test/faults/outbox-outage.e2e-spec.ts). The
 * catch-up's push uses the production options.
 */
const SHORT = { attempts: 2, backoff: { type: 'fixed', delay: 100 } };

/**
 * A cron tick only enqueues a job; when Redis is unreachable at that moment, or no worker runs at the tick
 * (a deploy across 04:00), the tick used to be dropped and a daily job slipped a whole day. The catch-up
 * enqueues the most recent missed tick of each hourly and daily schedule once, and never a tick that ran
 * (job_runs, also after BullMQ has dropped the completed job). Redis and PostgreSQL are cut with TCP
 * proxies; the test reads and seeds the database directly.
 */
describe('fault injection: a scheduled tick missed while Redis was unreachable is caught up', () => {
  let env: TestEnv;
  let redisProxy: TcpProxy;
  let dbProxy: TcpProxy;
  let worker: INestApplication;
  let scheduler: JobScheduler;
  let queues: QueueService;
  let db: PrismaService;

  const jobIds = async (job: JobDef) =>
    (await queues.queue(job.queue).getJobs([...ALL_STATES]))
      .map((j) => j?.id)
      .filter((id) => id?.startsWith(`${job.name}-`));
  const logged = (msg: string) =>
    env.logs.lines
      .map((line) => JSON.parse(line) as { msg?: string; job?: string; jobId?: string })
      .filter((line) => line.msg === msg);
  const caughtUpMetric = async () =>
    (await worker.get(MetricsService).scheduledTicksCaughtUp.get()).values.map((v) => [
      v.labels.job_name,
      v.value,
    ]);
  /** The queues' connection has seen Redis go: a read through it fails (a read cannot land later). */
  const noticeLoss = () =>
    queues
      .queue(JOBS.reconcileCredits.queue)
      .getJobCounts()
      .then(
        () => 'answered',
        () => 'failed',
      );
  /** A run as the recorder writes it in job_runs: the job started then. */
  const ranAt = (key: ScheduledJobKey, started: Date) =>
    db.jobRun.upsert({
      where: { name: JOBS[key].name },
      create: {
        name: JOBS[key].name,
        lastStartedAt: started,
        lastFinishedAt: new Date(started.getTime() + 1000),
        lastStatus: 'ok',
        runs: 1,
      },
      update: { lastStartedAt: started },
    });

  beforeAll(async () => {
    env = await TestEnv.create();
    [redisProxy, dbProxy] = await Promise.all([
      TcpProxy.start(env.config.redis.url),
      TcpProxy.start(env.config.database.url),
    ]);
    env.onClose(() => Promise.all([redisProxy.close(), dbProxy.close()]).then(() => undefined));
    db = directDb(env);
    worker = await env.startWorker({
      config: env.configWith({
        REDIS_URL: redisProxy.rewrite(env.config.redis.url),
        DATABASE_URL: dbProxy.rewrite(env.config.database.url),
      }),
    });
    scheduler = worker.get(JobScheduler);
    queues = worker.get(QueueService);
  });
  afterAll(() => env.close());

  it('enqueues the missed daily tick once when Redis comes back, and not a tick that ran', async () => {
    // The daily archive prune really runs at its tick; BullMQ then drops the completed job (24 h after
    // completion, or Redis restarted empty): only job_runs still knows the tick ran.
    expect(await scheduler.enqueue('pruneWebhookArchive', new Date())).toBe(true);
    const run = await waitFor(
      () =>
        db.jobRun
          .findUnique({ where: { name: JOBS.pruneWebhookArchive.name } })
          .then((r) => (r?.lastStatus === 'ok' ? r : null)),
      15_000,
    );
    const [pruned] = await queues.queue(JOBS.pruneWebhookArchive.queue).getJobs([...ALL_STATES]);
    await pruned.remove();

    const now = run.lastStartedAt ?? new Date();
    const deleteTick = dueTick(SCHEDULES.hardDeleteAccounts, now)!;
    const deleteJobId = tickJobId(JOBS.hardDeleteAccounts, deleteTick, 'day');
    // The hard delete and the per-minute backfill last ran a day earlier.
    await ranAt('hardDeleteAccounts', new Date(deleteTick.getTime() - DAY_MS + 60_000));
    await ranAt('billingBackfill', new Date(now.getTime() - DAY_MS));

    // The replica whose timer fired at 04:00 could not reach Redis: its enqueue failed for good (a
    // command that timed out on a live connection could still be sent once Redis answers).
    const unreachable = new QueueService(
      env.configWith({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` }),
    );
    const replica = new JobScheduler(unreachable, worker.get(JobRunRecorder), worker.get(MetricsService));
    expect(await replica.enqueue('hardDeleteAccounts', deleteTick)).toBe(false);
    await unreachable.onModuleDestroy();
    expect(logged('could not enqueue tick').map((line) => line.job)).toEqual([JOBS.hardDeleteAccounts.name]);
    expect(await jobIds(JOBS.hardDeleteAccounts)).toEqual([]);

    // Redis goes away under this worker too, and comes back.
    redisProxy.cut();
    expect(await noticeLoss()).toBe('failed');
    redisProxy.restore();

    // No tick is called: the queues' connection coming back starts the catch-up.
    await waitFor(async () => (await jobIds(JOBS.hardDeleteAccounts)).length > 0, 15_000);
    expect(await jobIds(JOBS.hardDeleteAccounts)).toEqual([deleteJobId]);
    expect(await jobIds(JOBS.pruneWebhookArchive)).toEqual([]);
    // Per-minute schedules are left to their next tick; jobs that never ran (no job_runs row) to their first.
    expect(await jobIds(JOBS.billingBackfill)).toEqual([]);
    expect(await jobIds(JOBS.expireSubscriptions)).toEqual([]);
    expect(logged('scheduled tick caught up').map((line) => [line.job, line.jobId])).toEqual([
      [JOBS.hardDeleteAccounts.name, deleteJobId],
    ]);
    expect(await caughtUpMetric()).toEqual([[JOBS.hardDeleteAccounts.name, 1]]);

    // Once: another pass, or another replica's, finds the tick in BullMQ or already run.
    expect(await scheduler.catchUp(new Date())).toEqual([]);
    expect(await jobIds(JOBS.hardDeleteAccounts)).toEqual([deleteJobId]);
    expect(logged('scheduled tick caught up')).toHaveLength(1);
  });

  it('a catch-up that failed on PostgreSQL runs again after the next tick that reaches Redis', async () => {
    // The hourly drift check last ran the hour before its most recent tick.
    const tick = dueTick(SCHEDULES.checkBillingDrift, new Date())!;
    await ranAt('checkBillingDrift', new Date(tick.getTime() - HOUR_MS + 60_000));
    const failedPasses = logged('could not catch up scheduled ticks').length;

    expect(await jobIds(JOBS.checkBillingDrift)).toEqual([]);
    dbProxy.cut();
    redisProxy.cut();
    expect(await noticeLoss()).toBe('failed');
    redisProxy.restore();
    // Redis is back, PostgreSQL is not: the pass started by the reconnect cannot read job_runs.
    await waitFor(async () => logged('could not catch up scheduled ticks').length > failedPasses, 15_000);
    dbProxy.restore();
    expect(await jobIds(JOBS.checkBillingDrift)).toEqual([]);

    // A tick (per minute in production) that reaches Redis runs the pending catch-up.
    await waitFor(async () => {
      await scheduler.tick('reconcileCredits', new Date());
      return (await jobIds(JOBS.checkBillingDrift)).length > 0;
    }, 15_000);
    expect(await jobIds(JOBS.checkBillingDrift)).toHaveLength(1);
    expect(logged('scheduled tick caught up').map((line) => line.job)).toContain(JOBS.checkBillingDrift.name);
  });

  it('runs a tick whose job failed on a PostgreSQL outage again, once, though Redis never went away', async () => {
    // The hourly expiry last ran the hour before its most recent tick; at the tick PostgreSQL fails over
    // for longer than the job's attempts: its job_runs upsert fails each time, so last_started_at stays
    // before the tick and the job fails for good in BullMQ, marked as an outage.
    const tick = dueTick(SCHEDULES.expireSubscriptions, new Date())!;
    const jobId = tickJobId(JOBS.expireSubscriptions, tick, 'hour');
    await ranAt('expireSubscriptions', new Date(tick.getTime() - HOUR_MS + 60_000));
    const queue = queues.queue(JOBS.expireSubscriptions.queue);
    dbProxy.cut();
    await queues.add(JOBS.expireSubscriptions, {}, { jobId, ...SHORT });
    await waitFor(async () => (await queue.getJobState(jobId)) === 'failed', 30_000, 100);
    dbProxy.restore();
    expect((await queue.getJob(jobId))!.failedReason).toMatch(new RegExp(`^${OUTAGE_MARK}`));
    const before = await db.jobRun.findUniqueOrThrow({ where: { name: JOBS.expireSubscriptions.name } });
    expect(before.lastStartedAt!.getTime()).toBeLessThan(tick.getTime());

    // A pass (every CATCH_UP_EVERY_MS on the ticks, or any other) removes the failed job and adds it again.
    expect(await scheduler.catchUp(new Date())).toEqual(['expireSubscriptions']);
    await waitFor(async () => (await queue.getJobState(jobId)) === 'completed', 20_000, 100);
    const after = await db.jobRun.findUniqueOrThrow({ where: { name: JOBS.expireSubscriptions.name } });
    expect(after).toMatchObject({ lastStatus: 'ok', runs: before.runs + 1 });
    expect(after.lastStartedAt!.getTime()).toBeGreaterThanOrEqual(tick.getTime());
    expect(
      logged('scheduled tick failed on an outage; running it again').map((l) => [l.job, l.jobId]),
    ).toEqual([[JOBS.expireSubscriptions.name, jobId]]);
    expect(await caughtUpMetric()).toContainEqual([JOBS.expireSubscriptions.name, 1]);

    // Exactly once: the next pass finds the tick run, one job under the tick's id.
    expect(await scheduler.catchUp(new Date())).toEqual([]);
    expect(await jobIds(JOBS.expireSubscriptions)).toEqual([jobId]);
    expect(
      await db.jobRun.findUniqueOrThrow({ where: { name: JOBS.expireSubscriptions.name } }),
    ).toMatchObject({
      runs: before.runs + 1,
    });
  });

  it('a worker that boots after a tick nobody enqueued (a deploy at the tick) enqueues it', async () => {
    // The hourly allowance job last ran the hour before its most recent tick; no worker ran at that tick.
    const tick = dueTick(SCHEDULES.grantAllowances, new Date())!;
    await ranAt('grantAllowances', new Date(tick.getTime() - HOUR_MS + 60_000));
    const moduleRef = await Test.createTestingModule({
      imports: [WorkerModule.forRoot(env.config, { logStream: env.logs, schedule: true })],
    }).compile();
    const booted = moduleRef.createNestApplication({ bufferLogs: true });
    booted.useLogger(booted.get(Logger));
    try {
      await booted.init();
      await waitFor(async () => (await jobIds(JOBS.grantAllowances)).length > 0, 15_000);
      expect(await jobIds(JOBS.grantAllowances)).toHaveLength(1);
      expect(logged('scheduled tick caught up').map((line) => line.job)).toContain(JOBS.grantAllowances.name);
    } finally {
      await booted.close();
    }
  });
});
