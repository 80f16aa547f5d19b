import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS, SCHEDULES, tickJobId } from '../../infra/queue/queues.js';

/** Cron only enqueues; a minute-stamped job id makes replicas firing together produce one job. */
@Injectable()
export class BroadcastsScheduler {
  private readonly logger = new Logger(BroadcastsScheduler.name);

  constructor(private readonly queues: QueueService) {}

  @Cron(SCHEDULES.sweepBroadcasts, { name: JOBS.sweepBroadcasts.name, timeZone: 'UTC' })
  async sweep(): Promise<void> {
    await this.queues
      .add(JOBS.sweepBroadcasts, {}, { jobId: tickJobId(JOBS.sweepBroadcasts, new Date(), 'minute') })
      .catch((err: Error) => this.logger.warn({ err: err.message }, 'could not enqueue the broadcast sweep'));
  }
}
