import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { UsersModule } from '../users/users.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { BillingHooks } from './billing.hooks.js';
import { BillingModule } from './billing.module.js';
import { BillingProcessor } from './jobs/billing.processor.js';

@Module({
  imports: [
    BillingModule,
    UsersModule,
    // WebhookRetentionService: the archive's retention, run by the billing queue's prune job.
    WebhooksModule,
    BullModule.registerQueue({ name: QUEUES.billing }),
  ],
  providers: [BillingProcessor, BillingHooks],
})
export class BillingWorkerModule {}
