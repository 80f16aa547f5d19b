import { Module } from '@nestjs/common';
import { WebhookInboxRepository } from './webhook-inbox.repository.js';
import { WebhookInboxService } from './webhook-inbox.service.js';

@Module({ providers: [WebhookInboxRepository, WebhookInboxService], exports: [WebhookInboxService] })
export class WebhooksModule {}
