import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module.js';
import { EmailModule } from '../email/email.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { AllowanceService } from './allowance.service.js';
import { BillingDunningService } from './billing-dunning.service.js';
import { BillingActionsService } from './billing-actions.service.js';
import { BillingBackfillService } from './billing-backfill.service.js';
import { BillingDriftService } from './billing-drift.service.js';
import { BillingApiClient } from './billing-api.client.js';
import { BillingCatalog } from './billing.catalog.js';
import { BillingOwnersService } from './billing-owners.service.js';
import { BillingTierService } from './billing-tier.service.js';
import { BillingUsersRepository } from './billing-users.repository.js';
import { BillingWebhookService } from './billing-webhook.service.js';
import { CheckoutTokenService } from './checkout-token.service.js';
import { CreditPacksService } from './credit-packs.service.js';
import { PaymentsRepository } from './payments.repository.js';
import { PaymentsService } from './payments.service.js';
import { SubscriptionExpiryService } from './subscription-expiry.service.js';
import { SubscriptionStateService } from './subscription-state.service.js';
import { SubscriptionsRepository } from './subscriptions.repository.js';
import { SyncCheckpointsRepository } from './sync-checkpoints.repository.js';

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
