import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { isFinalAttempt, JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JobRunRecorder } from '../../infra/queue/job-run.recorder.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../infra/queue/worker-options.js';
import { BillingBackfillService } from './billing-backfill.service.js';
import { BillingDriftService } from './billing-drift.service.js';
import { BillingDunningService, type DunningEmailJob } from './billing-dunning.service.js';
import { SubscriptionExpiryService } from './subscription-expiry.service.js';
import { WebhookRetentionService } from './webhook-retention.service.js';

@Processor(QUEUES.billing, WORKER_OPTIONS)
export class BillingProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    recorder: JobRunRecorder,
    expiry: SubscriptionExpiryService,
    retention: WebhookRetentionService,
    backfill: BillingBackfillService,
    drift: BillingDriftService,
    dunning: BillingDunningService,
  ) {
    super(registry, recorder);
    this.handle(JOBS.dunningEmail, async (job: Job<DunningEmailJob>) => {
      const outcome = await dunning.send(job.data, isFinalAttempt(job));
      return { status: outcome.status, reason: outcome.reason };
    });
    this.handle(JOBS.checkBillingDrift, () => drift.check(), { recordRun: true });
    this.handle(JOBS.billingBackfill, () => backfill.run(), { recordRun: true });
    this.handle(JOBS.expireSubscriptions, () => expiry.expireLapsed(), { recordRun: true });
    this.handle(JOBS.pruneWebhookArchive, () => retention.prune(), { recordRun: true });
  }
}
