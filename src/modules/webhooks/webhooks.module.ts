import { Module } from '@nestjs/common';
import { WebhookInboxRepository } from './webhook-inbox.repository.js';
import { WebhookInboxService } from './webhook-inbox.service.js';
import { WebhookRefusalsService } from './webhook-refusals.service.js';
import { WebhookRetentionService } from './webhook-retention.service.js';

@Module({
  providers: [WebhookInboxRepository, WebhookInboxService, WebhookRefusalsService, WebhookRetentionService],
  exports: [WebhookInboxRepository, WebhookInboxService, WebhookRefusalsService, WebhookRetentionService],
})
export class WebhooksModule {}
