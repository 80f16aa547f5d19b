import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { QueueService } from '../../infra/queue/queue.service.js';
import { type JobDef, JOBS, SCHEDULES, tickJobId } from '../../infra/queue/queues.js';

/** Cron only enqueues, with one job id per tick, so several schedulers never run a tick twice. */
@Injectable()
export class BillingScheduler {
  private readonly logger = new Logger(BillingScheduler.name);

  constructor(private readonly queues: QueueService) {}

  @Cron(SCHEDULES.expireSubscriptions, { name: JOBS.expireSubscriptions.name, timeZone: 'UTC' })
  expireSubscriptions(): Promise<void> {
    return this.enqueue(JOBS.expireSubscriptions, 'hour');
  }

  @Cron(SCHEDULES.billingBackfill, { name: JOBS.billingBackfill.name, timeZone: 'UTC' })
  billingBackfill(): Promise<void> {
    return this.enqueue(JOBS.billingBackfill, 'minute');
  }

  @Cron(SCHEDULES.checkBillingDrift, { name: JOBS.checkBillingDrift.name, timeZone: 'UTC' })
  checkBillingDrift(): Promise<void> {
    return this.enqueue(JOBS.checkBillingDrift, 'hour');
  }

  @Cron(SCHEDULES.grantAllowances, { name: JOBS.grantAllowances.name, timeZone: 'UTC' })
  grantAllowances(): Promise<void> {
    return this.enqueue(JOBS.grantAllowances, 'hour');
  }

  @Cron(SCHEDULES.pruneWebhookArchive, { name: JOBS.pruneWebhookArchive.name, timeZone: 'UTC' })
  pruneWebhookArchive(): Promise<void> {
    return this.enqueue(JOBS.pruneWebhookArchive, 'day');
  }

  private async enqueue(job: JobDef, granularity: 'minute' | 'hour' | 'day'): Promise<void> {
    await this.queues
      .add(job, {}, { jobId: tickJobId(job, new Date(), granularity) })
      .catch((err: Error) => this.logger.warn({ job: job.name, err: err.message }, 'could not enqueue tick'));
  }
}
