import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { isDeadlock } from '../../common/errors/database-errors.js';
import { AppConfig } from '../../config/app-config.js';
import { isFinalAttempt, JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { OnJob } from '../../infra/queue/on-job.decorator.js';
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
    private readonly inbox: WebhookInboxService,
    private readonly config: AppConfig,
  ) {
    super(registry);
  }

  @OnJob(JOBS.applyWebhooks)
  applyMany(job: Job<{ ids: string[] }>) {
    return this.inbox.applyMany(job.data.ids, isFinalAttempt(job));
  }

  @OnJob(JOBS.processWebhook)
  apply(job: Job<{ id: string }>) {
    return this.inbox.apply(job.data.id, isFinalAttempt(job));
  }

  /**
   * Every 10 s: jobs for accepted events that lost theirs, then the failed events due for a re-apply. A
   * re-apply PostgreSQL aborted as a deadlock victim (it races deliveries and replays of the same events)
   * changed nothing and is simply left to the next tick: it does not fail the relay.
   */
  @OnJob(JOBS.relayWebhooks)
  async relay() {
    const pushed = await this.inbox.relay();
    let reapplied = 0;
    try {
      reapplied = await this.inbox.reapplyDue();
    } catch (err) {
      if (!isDeadlock(err)) throw err;
      this.logger.warn(
        { err: (err as Error).message },
        'automatic re-apply aborted by a deadlock; the next relay tick retries it',
      );
    }
    return { pushed, reapplied };
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
