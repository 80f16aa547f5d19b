import { Module } from '@nestjs/common';
import { WebhooksModule } from '../../webhooks/webhooks.module.js';
import { AdminWebhooksController } from './admin-webhooks.controller.js';
import { AdminWebhooksService } from './admin-webhooks.service.js';

/** The admin webhook archive: list, inspect, replay (API process only). */
@Module({
  imports: [WebhooksModule],
  controllers: [AdminWebhooksController],
  providers: [AdminWebhooksService],
})
export class AdminWebhooksModule {}
