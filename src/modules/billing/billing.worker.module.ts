import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { UsersModule } from '../users/users.module.js';
import { BillingHooks } from './billing.hooks.js';
import { BillingModule } from './billing.module.js';
import { BillingProcessor } from './billing.processor.js';

@Module({
  imports: [BillingModule, UsersModule, BullModule.registerQueue({ name: QUEUES.billing })],
  providers: [BillingProcessor, BillingHooks],
})
export class BillingWorkerModule {}
