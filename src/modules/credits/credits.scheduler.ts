import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS, SCHEDULES, tickJobId } from '../../infra/queue/queues.js';

/** Cron only enqueues; one job per minute cluster-wide thanks to the deterministic job id. */
@Injectable()
export class CreditsScheduler {
  private readonly logger = new Logger(CreditsScheduler.name);

  constructor(private readonly queues: QueueService) {}

  @Cron(SCHEDULES.reconcileCredits, { name: JOBS.reconcileCredits.name, timeZone: 'UTC' })
  async tick(): Promise<void> {
    await this.enqueue(new Date());
  }

  /** The tick for a given time (the cron library passes its own arguments to tick, so no default here). */
  async enqueue(now: Date): Promise<void> {
    await this.queues
      .add(JOBS.reconcileCredits, {}, { jobId: tickJobId(JOBS.reconcileCredits, now, 'minute') })
      .catch((err: Error) =>
        this.logger.warn({ err: err.message }, 'could not enqueue the credit reconciler'),
      );
  }
}
