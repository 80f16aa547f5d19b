import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { QUEUES } from '../../infra/queue/queues.js';
import { WebhooksModule } from './webhooks.module.js';
import { WebhooksProcessor } from './webhooks.processor.js';

@Module({
  imports: [WebhooksModule, BullModule.registerQueue({ name: QUEUES.webhooks })],
  providers: [WebhooksProcessor],
})
export class WebhooksWorkerModule {}
