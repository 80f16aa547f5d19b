import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { AppConfig } from '../../config/app-config.js';
import { isFinalAttempt, JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../infra/queue/worker-options.js';
import { WebhookInboxService } from './webhook-inbox.service.js';

/**
 * Applies accepted webhooks. Events of different subscriptions and users run in parallel
 * (WEBHOOK_CONCURRENCY); the handlers' locks and newer-wins rules make any order converge.
 */
@Processor(QUEUES.webhooks, WORKER_OPTIONS)
export class WebhooksProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    inbox: WebhookInboxService,
    private readonly config: AppConfig,
  ) {
    super(registry);
    this.handle(JOBS.processWebhook, (job: Job<{ id: string }>) =>
      inbox.apply(job.data.id, isFinalAttempt(job)),
    );
    this.handle(JOBS.relayWebhooks, async () => ({ pushed: await inbox.relay() }));
  }

  override onApplicationBootstrap(): void {
    super.onApplicationBootstrap();
    try {
      this.worker.concurrency = this.config.webhookProcessing.concurrency;
    } catch {
      // no worker in this process
    }
  }
}
