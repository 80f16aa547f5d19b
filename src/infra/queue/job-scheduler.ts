import { Injectable, Logger, type OnApplicationBootstrap, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
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
 * The one scheduler of the worker, driven by the SCHEDULES and INTERVALS tables. A tick only enqueues,
 * with a deterministic job id, so replicas firing together produce one job and the job itself runs in its
 * processor's `@OnJob` method. Timers start only when @nestjs/schedule is loaded (the worker's
 * `schedule` option); tests call enqueue() with the time they want.
 */
@Injectable()
export class JobScheduler implements OnApplicationBootstrap {
  private readonly logger = new Logger(JobScheduler.name);

  constructor(
    private readonly queues: QueueService,
    @Optional() private readonly registry?: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.registry) return;
    for (const key of Object.keys(SCHEDULES) as ScheduledJobKey[]) {
      const { cron, timeZone } = SCHEDULES[key];
      const job = new CronJob(cron, () => this.enqueue(key, new Date()), null, true, timeZone);
      this.registry.addCronJob(JOBS[key].name, job);
    }
    for (const key of Object.keys(INTERVALS) as IntervalJobKey[]) {
      const timer = setInterval(() => void this.enqueueInterval(key, new Date()), INTERVALS[key].everyMs);
      this.registry.addInterval(JOBS[key].name, timer);
    }
  }

  /** The tick of a scheduled job at `now`: one job per minute, hour or day (its row's `dedupe`). */
  async enqueue(key: ScheduledJobKey, now: Date): Promise<void> {
    const job = JOBS[key];
    await this.queues
      .add(job, {}, { jobId: tickJobId(job, now, SCHEDULES[key].dedupe) })
      .catch((err: Error) => this.logger.warn({ job: job.name, err: err.message }, 'could not enqueue tick'));
  }

  /** The tick of a relay at `now`: one job per period. */
  async enqueueInterval(key: IntervalJobKey, now: Date): Promise<void> {
    const job = JOBS[key];
    const period = Math.floor(now.getTime() / INTERVALS[key].everyMs);
    await this.queues.add(job, {}, { jobId: `${job.name}-${period}` }).catch(() => undefined);
  }
}
