import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Logger } from 'nestjs-pino';
import { WorkerModule } from '../../src/app/worker.module.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { dueTick } from '../../src/infra/queue/due-tick.js';
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
import { TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const DAY_MS = 24 * 3600_000;
const ALL_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed'] as const;

/**
 * A cron tick only enqueues a job; when Redis is unreachable at that moment, or no worker runs at the tick
 * (a deploy across 04:00), the tick used to be dropped and a daily job slipped a whole day. The catch-up
 * enqueues the most recent missed tick of each hourly and daily schedule once, and never a tick that ran
 * (job_runs, also after BullMQ has dropped the completed job). Redis is cut with a TCP proxy.
 */
describe('fault injection: a scheduled tick missed while Redis was unreachable is caught up', () => {
  let env: TestEnv;
  let proxy: TcpProxy;
  let worker: INestApplication;
  let scheduler: JobScheduler;
  let queues: QueueService;
  let prisma: PrismaService;

  const jobsWithPrefix = async (job: JobDef, prefix: string) =>
    (await queues.queue(job.queue).getJobs([...ALL_STATES])).filter((j) => j?.id?.startsWith(prefix));
  const caughtUpLines = () =>
    env.logs.lines
      .map((line) => JSON.parse(line) as { msg?: string; job?: string; jobId?: string })
      .filter((line) => line.msg === 'scheduled tick caught up');
  const caughtUpMetric = async () =>
    (await worker.get(MetricsService).scheduledTicksCaughtUp.get()).values.map((v) => [
      v.labels.job_name,
      v.value,
    ]);
  /** A run recorded in job_runs as the recorder writes it (the job ran then). */
  const ranAt = (key: ScheduledJobKey, started: Date) =>
    prisma.jobRun.upsert({
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
    proxy = await TcpProxy.start(env.config.redis.url);
    env.onClose(() => proxy.close());
    worker = await env.startWorker({
      config: env.configWith({ REDIS_URL: proxy.rewrite(env.config.redis.url) }),
    });
    scheduler = worker.get(JobScheduler);
    queues = worker.get(QueueService);
    prisma = worker.get(PrismaService);
  });
  afterAll(() => env.close());

  it('enqueues the missed daily tick once after Redis returns, and not a tick that ran', async () => {
    // The hourly expiry really runs at its tick; BullMQ then drops the completed job (24 h after
    // completion, or Redis restarted empty): only job_runs still knows the tick ran.
    expect(await scheduler.enqueue('expireSubscriptions', new Date())).toBe(true);
    const run = await waitFor(
      () =>
        prisma.jobRun
          .findUnique({ where: { name: JOBS.expireSubscriptions.name } })
          .then((r) => (r?.lastStatus === 'ok' ? r : null)),
      15_000,
    );
    const ranExpiry = await jobsWithPrefix(JOBS.expireSubscriptions, JOBS.expireSubscriptions.name);
    expect(ranExpiry).toHaveLength(1);
    await ranExpiry[0].remove();

    // Every time below is this instant, when the expiry had just started: its due tick had run.
    const now = run.lastStartedAt!;
    const deleteTick = dueTick(SCHEDULES.hardDeleteAccounts, now)!;
    const deleteJobId = tickJobId(JOBS.hardDeleteAccounts, deleteTick, 'day');
    // The hard delete and the per-minute backfill last ran a day earlier.
    await ranAt('hardDeleteAccounts', new Date(deleteTick.getTime() - DAY_MS + 60_000));
    await ranAt('billingBackfill', new Date(now.getTime() - DAY_MS));

    proxy.cut();
    expect(await scheduler.enqueue('hardDeleteAccounts', deleteTick)).toBe(false);
    expect(env.logs.lines.some((line) => line.includes('could not enqueue tick'))).toBe(true);
    proxy.restore();

    // The next tick that reaches Redis catches up (a per-minute tick in production). Until the
    // connection is back, a tick fails and leaves the catch-up pending.
    await waitFor(async () => {
      await scheduler.tick('reconcileCredits', now);
      return (await jobsWithPrefix(JOBS.reconcileCredits, JOBS.reconcileCredits.name)).length > 0;
    }, 15_000);

    expect(
      (await jobsWithPrefix(JOBS.hardDeleteAccounts, JOBS.hardDeleteAccounts.name)).map((j) => j.id),
    ).toEqual([deleteJobId]);
    const expiryTick = tickJobId(
      JOBS.expireSubscriptions,
      dueTick(SCHEDULES.expireSubscriptions, now)!,
      'hour',
    );
    expect(await queues.queue(JOBS.expireSubscriptions.queue).getJob(expiryTick)).toBeUndefined();
    // Per-minute schedules are left to their next tick; jobs that never ran (no job_runs row) to their first.
    expect((await jobsWithPrefix(JOBS.billingBackfill, JOBS.billingBackfill.name)).map((j) => j.id)).toEqual(
      [],
    );
    expect(
      (await jobsWithPrefix(JOBS.pruneWebhookArchive, JOBS.pruneWebhookArchive.name)).map((j) => j.id),
    ).toEqual([]);
    expect(caughtUpLines().map((line) => [line.job, line.jobId])).toEqual([
      [JOBS.hardDeleteAccounts.name, deleteJobId],
    ]);
    expect(await caughtUpMetric()).toEqual([[JOBS.hardDeleteAccounts.name, 1]]);

    // Caught up once: another pass, and another replica's, find the tick in BullMQ or already run.
    expect(await scheduler.catchUp(now)).toEqual([]);
    expect(await scheduler.catchUp(new Date(now.getTime() + 1000))).toEqual([]);
    expect(
      (await jobsWithPrefix(JOBS.hardDeleteAccounts, JOBS.hardDeleteAccounts.name)).map((j) => j.id),
    ).toEqual([deleteJobId]);
    expect(caughtUpLines()).toHaveLength(1);
  });

  it('a worker that boots after a tick nobody enqueued (a deploy at the tick) enqueues it', async () => {
    // The daily archive prune last ran the day before its most recent tick; no worker ran at that tick.
    const tick = dueTick(SCHEDULES.pruneWebhookArchive, new Date())!;
    await ranAt('pruneWebhookArchive', new Date(tick.getTime() - DAY_MS + 60_000));
    const moduleRef = await Test.createTestingModule({
      imports: [WorkerModule.forRoot(env.config, { logStream: env.logs, schedule: true })],
    }).compile();
    const booted = moduleRef.createNestApplication({ bufferLogs: true });
    booted.useLogger(booted.get(Logger));
    try {
      await booted.init();
      const caught = await waitFor(async () => {
        const jobs = await jobsWithPrefix(JOBS.pruneWebhookArchive, JOBS.pruneWebhookArchive.name);
        return jobs.length > 0 ? jobs : null;
      }, 15_000);
      expect(caught).toHaveLength(1);
      expect(caughtUpLines().map((line) => line.job)).toContain(JOBS.pruneWebhookArchive.name);
    } finally {
      await booted.close();
    }
  });
});
