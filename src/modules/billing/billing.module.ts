import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module.js';
import { EmailModule } from '../email/email.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { AllowanceService } from './jobs/allowance.service.js';
import { BillingDunningService } from './jobs/billing-dunning.service.js';
import { BillingActionsService } from './actions/billing-actions.service.js';
import { BillingBackfillService } from './jobs/billing-backfill.service.js';
import { BillingDriftService } from './jobs/billing-drift.service.js';
import { BillingApiClient } from './billing-api.client.js';
import { BillingCatalog } from './billing.catalog.js';
import { BillingOwnersService } from './subscriptions/billing-owners.service.js';
import { BillingTierService } from './subscriptions/billing-tier.service.js';
import { BillingUsersRepository } from './subscriptions/billing-users.repository.js';
import { BillingWebhookService } from './intake/billing-webhook.service.js';
import { CheckoutTokenService } from './actions/checkout-token.service.js';
import { CreditPacksService } from './actions/credit-packs.service.js';
import { PaymentsRepository } from './payments/payments.repository.js';
import { PaymentsService } from './payments/payments.service.js';
import { SubscriptionExpiryService } from './jobs/subscription-expiry.service.js';
import { SubscriptionStateService } from './subscriptions/subscription-state.service.js';
import { SubscriptionsRepository } from './subscriptions/subscriptions.repository.js';
import { SyncCheckpointsRepository } from './jobs/sync-checkpoints.repository.js';

@Module({
  imports: [CreditsModule, WebhooksModule, EmailModule],
  providers: [
    AllowanceService,
    BillingActionsService,
    BillingBackfillService,
    BillingDriftService,
    BillingDunningService,
    BillingApiClient,
    BillingCatalog,
    BillingOwnersService,
    BillingTierService,
    BillingUsersRepository,
    BillingWebhookService,
    CheckoutTokenService,
    CreditPacksService,
    PaymentsRepository,
    PaymentsService,
    SubscriptionExpiryService,
    SubscriptionStateService,
    SubscriptionsRepository,
    SyncCheckpointsRepository,
  ],
  exports: [
    AllowanceService,
    BillingActionsService,
    BillingBackfillService,
    BillingDriftService,
    BillingDunningService,
    BillingApiClient,
    BillingCatalog,
    BillingWebhookService,
    CheckoutTokenService,
    CreditPacksService,
    SubscriptionExpiryService,
    SubscriptionsRepository,
  ],
})
export class BillingModule {}
