import { Module } from '@nestjs/common';
import { BillingController } from './actions/billing.controller.js';
import { BillingModule } from './billing.module.js';
import { BillingWebhookController } from './intake/billing-webhook.controller.js';

@Module({ imports: [BillingModule], controllers: [BillingController, BillingWebhookController] })
export class BillingHttpModule {}
