import { Module } from '@nestjs/common';
import { WebhookInboxRepository } from './webhook-inbox.repository.js';
import { WebhookInboxService } from './webhook-inbox.service.js';
import { WebhookRefusalsService } from './webhook-refusals.service.js';

@Module({
  providers: [WebhookInboxRepository, WebhookInboxService, WebhookRefusalsService],
  exports: [WebhookInboxRepository, WebhookInboxService, WebhookRefusalsService],
})
export class WebhooksModule {}
