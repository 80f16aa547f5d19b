import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS } from '../../infra/queue/queues.js';

/** Every 10 s: one relay job per bucket (replicas firing in the same bucket produce one job). */
@Injectable()
export class WebhooksScheduler {
  constructor(private readonly queues: QueueService) {}

  @Interval('relay-webhooks', 10_000)
  async tick(): Promise<void> {
    const bucket = Math.floor(Date.now() / 10_000);
    await this.queues
      .add(JOBS.relayWebhooks, {}, { jobId: `${JOBS.relayWebhooks.name}-${bucket}` })
      .catch(() => undefined);
  }
}
