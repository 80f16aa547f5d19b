import { Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { HttpClient } from '../../infra/http/http-client.js';
import { DisposableDomainsRepository } from './disposable/disposable-domains.repository.js';
import { DisposableDomainsService } from './disposable/disposable-domains.service.js';
import { EmailRepository } from './email.repository.js';
import { EmailService } from './email.service.js';
import { EmailBatchDelivery } from './batch-delivery.js';
import { EmailRecorder } from './email-recorder.js';
import { EmailTemplates } from './email.templates.js';
import { EmailSendBudget } from './send-budget.js';
import { ConsoleEmailProvider } from './providers/console.provider.js';
import { EmailProvider } from './providers/email-provider.js';
import { EmailRateCeiling } from './providers/rate-ceiling.js';
import { ResendEmailProvider } from './providers/resend.provider.js';
import { UsersModule } from '../users/users.module.js';
import { UnsubscribeTokens } from './unsubscribe-tokens.js';
import { UnsubscribeService } from './unsubscribe.service.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { EmailWebhookService } from './deliverability/email-webhook.service.js';
import { EmailSuppressionsRepository } from './deliverability/suppressions.repository.js';
import { SuppressionsService } from './deliverability/suppressions.service.js';
import { SubscriptionConfirmService } from './subscription-confirm.service.js';

/** Shared by both processes: the API accepts e-mail webhooks, the worker applies them (and sends). */
@Module({
  // UsersRepository: the one writer of users' consent columns and email_consent_events.
  imports: [WebhooksModule, UsersModule],
  providers: [
    EmailService,
    EmailBatchDelivery,
    EmailRecorder,
    EmailWebhookService,
    EmailSuppressionsRepository,
    SuppressionsService,
    SubscriptionConfirmService,
    EmailRepository,
    EmailTemplates,
    UnsubscribeTokens,
    UnsubscribeService,
    EmailRateCeiling,
    EmailSendBudget,
    DisposableDomainsService,
    DisposableDomainsRepository,
    {
      provide: EmailProvider,
      inject: [AppConfig, HttpClient, EmailRateCeiling],
      useFactory: (config: AppConfig, http: HttpClient, ceiling: EmailRateCeiling): EmailProvider =>
        config.email.provider === 'resend'
          ? new ResendEmailProvider(config, http, ceiling)
          : new ConsoleEmailProvider(config),
    },
  ],
  exports: [
    EmailService,
    EmailBatchDelivery,
    EmailRecorder,
    EmailRepository,
    EmailTemplates,
    EmailProvider,
    UnsubscribeTokens,
    UnsubscribeService,
    DisposableDomainsService,
    SuppressionsService,
    EmailWebhookService,
    SubscriptionConfirmService,
  ],
})
export class EmailModule {}
