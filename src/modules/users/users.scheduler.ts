import { Injectable, Logger } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS, SCHEDULES, tickJobId } from '../../infra/queue/queues.js';

/** Cron only enqueues; the day's job id makes replicas that fire at the same time produce one job. */
@Injectable()
export class UsersScheduler {
  private readonly logger = new Logger(UsersScheduler.name);

  constructor(private readonly queues: QueueService) {}

  @Cron(SCHEDULES.hardDeleteAccounts, { name: JOBS.hardDeleteAccounts.name, timeZone: 'UTC' })
  async hardDeleteAccounts(now = new Date()): Promise<void> {
    try {
      await this.queues.add(
        JOBS.hardDeleteAccounts,
        {},
        { jobId: tickJobId(JOBS.hardDeleteAccounts, now, 'day') },
      );
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'could not enqueue the hard-delete job');
    }
  }
}
