import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { QueueService } from './queue.service.js';
import { JOBS } from './queues.js';

/** Cron only enqueues; the relay job itself runs in the maintenance processor. */
@Injectable()
export class OutboxScheduler {
  constructor(private readonly queues: QueueService) {}

  @Interval('relay-outbox', 10_000)
  async tick(): Promise<void> {
    // Ten-second buckets: replicas firing in the same bucket produce one job.
    const bucket = Math.floor(Date.now() / 10_000);
    await this.queues
      .add(JOBS.relayOutbox, {}, { jobId: `${JOBS.relayOutbox.name}-${bucket}` })
      .catch(() => undefined);
  }
}
