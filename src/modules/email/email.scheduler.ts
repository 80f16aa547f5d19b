import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS, SCHEDULES, tickJobId } from '../../infra/queue/queues.js';

/** Cron only enqueues; a day-stamped job id makes replicas firing together produce one job. */
@Injectable()
export class EmailScheduler {
  private readonly logger = new Logger(EmailScheduler.name);

  constructor(private readonly queues: QueueService) {}

  @Cron(SCHEDULES.refreshBlocklist, { name: JOBS.refreshBlocklist.name, timeZone: 'UTC' })
  async refreshBlocklist(): Promise<void> {
    await this.queues
      .add(JOBS.refreshBlocklist, {}, { jobId: tickJobId(JOBS.refreshBlocklist, new Date(), 'day') })
      .catch((err: Error) =>
        this.logger.warn({ err: err.message }, 'could not enqueue the blocklist refresh'),
      );
  }
}
