import { Module } from '@nestjs/common';
import { EmailWebhookController } from './deliverability/email-webhook.controller.js';
import { SuppressionsController } from './deliverability/suppressions.controller.js';
import { EmailModule } from './email.module.js';
import { SubscriptionConfirmController } from './subscription-confirm.controller.js';
import { UnsubscribeController } from './unsubscribe.controller.js';

@Module({
  imports: [EmailModule],
  controllers: [
    UnsubscribeController,
    SubscriptionConfirmController,
    EmailWebhookController,
    SuppressionsController,
  ],
})
export class EmailHttpModule {}
