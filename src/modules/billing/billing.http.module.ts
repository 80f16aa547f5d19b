import { Module } from '@nestjs/common';
import { BillingController } from './billing.controller.js';
import { BillingModule } from './billing.module.js';
import { BillingWebhookController } from './billing-webhook.controller.js';

@Module({ imports: [BillingModule], controllers: [BillingController, BillingWebhookController] })
export class BillingHttpModule {}
