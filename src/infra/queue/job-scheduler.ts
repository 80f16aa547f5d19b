import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
  Optional,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { MetricsService } from '../metrics/metrics.service.js';
import { dueTick } from './due-tick.js';
import { failedOnOutage, nextOutagePush } from './job-failure.js';
import { JobRunRecorder } from './job-run.recorder.js';
import { QueueService } from './queue.service.js';
import {
  INTERVALS,
  type IntervalJobKey,
  JOBS,
  SCHEDULES,
  type ScheduledJobKey,
  tickJobId,
} from './queues.js';

/**
 * The longest a worker with timers goes without a catch-up pass: the next tick after it runs one. Covers
 * what no reconnect or failed enqueue announces, a tick's job failed on a PostgreSQL or provider outage
 * that never broke Redis (docs/decisions/faults.md).
 */
export const CATCH_UP_EVERY_MS = 5 * 60_000;

/**
 * The one scheduler of the worker, driven by the SCHEDULES and INTERVALS tables. A tick only enqueues,
 * with a deterministic job id, so replicas firing together produce one job and the job itself runs in its
 * processor's `@OnJob` method. Timers start only when @nestjs/schedule is loaded (the worker's
 * `schedule` option); tests call tick(), enqueue() and catchUp() with the time they want.
 *
 * A tick that could not be enqueued (Redis unreachable), that fired while no worker ran (a deploy) or whose
 * waiting job a Redis restart lost is caught up: at boot, when the queues' Redis connection is back, and
 * after the next tick that reaches Redis after a failure, each hourly and daily schedule gets its most
 * recent due tick enqueued unless that tick is in BullMQ or ran; a tick whose job failed on an outage is
 * run again. The ticks also start a pass every CATCH_UP_EVERY_MS (docs/decisions/faults.md). The catch-up
 * on reconnect needs no timer, so it also runs in a worker built without them (tests).
 */
@Injectable()
export class JobScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(JobScheduler.name);
  /** Set at boot and by every tick that failed to enqueue; cleared by a catch-up pass that finished. */
  private catchUpPending = false;
  private catchingUp: Promise<void> | null = null;
  /** When the last catch-up pass started (epoch ms). */
  private lastPassAt = 0;
  private closing = false;

  constructor(
    private readonly queues: QueueService,
    private readonly runs: JobRunRecorder,
    private readonly metrics: MetricsService,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    // Redis is back (after an outage, or a restart that may have lost waiting tick jobs): catch up now.
    this.queues.onReconnect(() => {
      this.catchUpPending = true;
      void this.catchUpIfPending(new Date());
    });
    if (!this.registry) return;
    for (const key of Object.keys(SCHEDULES) as ScheduledJobKey[]) {
      const { cron, timeZone } = SCHEDULES[key];
      const job = new CronJob(cron, () => this.tick(key, new Date()), null, true, timeZone);
      this.registry.addCronJob(JOBS[key].name, job);
    }
    for (const key of Object.keys(INTERVALS) as IntervalJobKey[]) {
      const timer = setInterval(() => void this.enqueueInterval(key, new Date()), INTERVALS[key].everyMs);
      this.registry.addInterval(JOBS[key].name, timer);
    }
    // Ticks that fired while no worker ran (a deploy across 04:00) or that this replica could not enqueue.
    this.catchUpPending = true;
    void this.catchUpIfPending(new Date());
  }

  /** A catch-up pass in flight finishes while the database and Redis are still open. */
  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    await this.catchingUp;
  }

  /**
   * What a cron timer runs: enqueue the tick; once an enqueue reaches Redis again, catch up whatever an
   * earlier failure left pending (Redis refused writes without dropping the connection, e.g. out of memory,
   * or a catch-up pass failed on PostgreSQL), and every CATCH_UP_EVERY_MS in any case. The per-minute
   * schedules make that within 30 s.
   */
  async tick(key: ScheduledJobKey, now: Date): Promise<void> {
    if (now.getTime() - this.lastPassAt >= CATCH_UP_EVERY_MS) this.catchUpPending = true;
    if (await this.enqueue(key, now)) await this.catchUpIfPending(now);
  }

  /**
   * The tick of a scheduled job at `now`: one job per minute, hour or day (its row's `dedupe`). False when
   * Redis refused it; the catch-up then enqueues it later.
   */
  async enqueue(key: ScheduledJobKey, now: Date): Promise<boolean> {
    const job = JOBS[key];
    try {
      await this.queues.add(job, {}, { jobId: tickJobId(job, now, SCHEDULES[key].dedupe) });
      return true;
    } catch (err) {
      this.catchUpPending = true;
      this.logger.warn({ job: job.name, err: (err as Error).message }, 'could not enqueue tick');
      return false;
    }
  }

  /** The tick of a relay at `now`: one job per period. */
  async enqueueInterval(key: IntervalJobKey, now: Date): Promise<void> {
    const job = JOBS[key];
    const period = Math.floor(now.getTime() / INTERVALS[key].everyMs);
    await this.queues.add(job, {}, { jobId: `${job.name}-${period}` }).catch(() => undefined);
  }

  /**
   * Enqueues the most recent tick due at `now` of every hourly and daily schedule whose job is neither in
   * BullMQ (waiting, running, or finished within the 24 h BullMQ keeps it) nor started since that tick
   * (job_runs: the mark that outlives BullMQ's retention and a Redis restarted empty). Under the tick's own
   * job id, so replicas catching up together and the timer's own tick still make one job. A job that never
   * ran (no job_runs row: a new installation or a new job) waits for its first tick. Per-minute schedules
   * are left to their next tick. A tick whose job failed on an outage (its last attempt's reason carries
   * OUTAGE_MARK: PostgreSQL down through every attempt leaves job_runs before the tick) is removed and
   * added again under its id, once per pass and spaced by the outage backoff (nextOutagePush); one that
   * failed for another reason stays failed. Returns the schedules it enqueued; throws when Redis or
   * PostgreSQL fails.
   */
  async catchUp(now: Date): Promise<ScheduledJobKey[]> {
    const keys = (Object.keys(SCHEDULES) as ScheduledJobKey[]).filter(
      (key) => SCHEDULES[key].dedupe !== 'minute',
    );
    const started = await this.runs.lastStarts(keys.map((key) => JOBS[key].name));
    const enqueued: ScheduledJobKey[] = [];
    for (const key of keys) {
      const job = JOBS[key];
      const lastStart = started.get(job.name);
      const tick = dueTick(SCHEDULES[key], now);
      if (!tick) continue;
      const jobId = tickJobId(job, tick, SCHEDULES[key].dedupe);
      const queue = this.queues.queue(job.queue);
      const state = await queue.getJobState(jobId);
      const fields = {
        job: job.name,
        tick: tick.toISOString(),
        jobId,
        lastStartedAt: lastStart?.toISOString(),
      };
      if (state === 'failed') {
        // The tick's job exists, so the tick was due whatever job_runs says.
        const failed = await queue.getJob(jobId);
        const data = failed && failedOnOutage(failed) ? nextOutagePush(failed, now.getTime()) : null;
        if (!failed || !data) continue;
        await failed.remove();
        await this.queues.add(job, data, { jobId });
        enqueued.push(key);
        this.metrics.scheduledTicksCaughtUp.inc({ job_name: job.name });
        this.logger.warn(
          { ...fields, reason: failed.failedReason },
          'scheduled tick failed on an outage; running it again',
        );
        continue;
      }
      if (!lastStart || lastStart >= tick || state !== 'unknown') continue;
      await this.queues.add(job, {}, { jobId });
      enqueued.push(key);
      this.metrics.scheduledTicksCaughtUp.inc({ job_name: job.name });
      this.logger.warn(fields, 'scheduled tick caught up');
    }
    return enqueued;
  }

  /** One catch-up pass at a time; a failed pass stays pending for the next successful tick. */
  private async catchUpIfPending(now: Date): Promise<void> {
    if (!this.catchUpPending || this.catchingUp || this.closing) return;
    this.catchUpPending = false;
    this.lastPassAt = now.getTime();
    this.catchingUp = this.catchUp(now)
      .then(() => undefined)
      .catch((err: Error) => {
        this.catchUpPending = true;
        this.logger.warn({ err: err.message }, 'could not catch up scheduled ticks');
      })
      .finally(() => (this.catchingUp = null));
    await this.catchingUp;
  }
}
