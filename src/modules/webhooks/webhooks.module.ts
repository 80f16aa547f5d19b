import { Module } from '@nestjs/common';
import { WebhookInboxService } from './webhook-inbox.service.js';

@Module({ providers: [WebhookInboxService], exports: [WebhookInboxService] })
export class WebhooksModule {}
