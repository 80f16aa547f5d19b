import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { isFinalAttempt, JobProcessor } from '../../../infra/queue/job-processor.js';
import { JobRegistry } from '../../../infra/queue/job-registry.js';
import { JobRunRecorder } from '../../../infra/queue/job-run.recorder.js';
import { OnJob } from '../../../infra/queue/on-job.decorator.js';
import { JOBS, QUEUES } from '../../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../../infra/queue/worker-options.js';
import { BillingBackfillService } from './billing-backfill.service.js';
import { AllowanceService } from './allowance.service.js';
import { BillingDriftService } from './billing-drift.service.js';
import { BillingDunningService, type DunningEmailJob } from './billing-dunning.service.js';
import { SubscriptionExpiryService } from './subscription-expiry.service.js';
import { WebhookRetentionService } from '../../webhooks/webhook-retention.service.js';

@Processor(QUEUES.billing, WORKER_OPTIONS)
export class BillingProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    recorder: JobRunRecorder,
    private readonly expiry: SubscriptionExpiryService,
    private readonly retention: WebhookRetentionService,
    private readonly backfill: BillingBackfillService,
    private readonly drift: BillingDriftService,
    private readonly allowances: AllowanceService,
    private readonly dunning: BillingDunningService,
  ) {
    super(registry, recorder);
  }

  @OnJob(JOBS.dunningEmail)
  async sendDunningEmail(job: Job<DunningEmailJob>) {
    const outcome = await this.dunning.send(job.data, isFinalAttempt(job));
    return { status: outcome.status, reason: outcome.reason };
  }

  @OnJob(JOBS.grantAllowances)
  grantAllowances() {
    return this.allowances.run();
  }

  /** Its hour-of-day bucket comes from the tick's enqueue time, which a delayed start or a retry keeps. */
  @OnJob(JOBS.checkBillingDrift)
  checkDrift(job: Job) {
    return this.drift.run(new Date(), new Date(job.timestamp || Date.now()));
  }

  @OnJob(JOBS.billingBackfill)
  runBackfill() {
    return this.backfill.run();
  }

  @OnJob(JOBS.expireSubscriptions)
  expireLapsed() {
    return this.expiry.expireLapsed();
  }

  @OnJob(JOBS.pruneWebhookArchive)
  pruneArchive() {
    return this.retention.prune();
  }
}
