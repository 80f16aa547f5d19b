import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
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
import { PaymentsRepository } from './payments.repository.js';
import { PaymentsService } from './payments.service.js';
import { SubscriptionExpiryService } from './subscription-expiry.service.js';
import { SubscriptionStateService } from './subscription-state.service.js';
import { SubscriptionsRepository } from './subscriptions.repository.js';
import { SyncCheckpointsRepository } from './sync-checkpoints.repository.js';

@Module({
  imports: [CreditsModule, WebhooksModule],
  providers: [
    BillingActionsService,
    BillingBackfillService,
    BillingDriftService,
    BillingApiClient,
    BillingCatalog,
    BillingOwnersService,
    BillingTierService,
    BillingUsersRepository,
    BillingWebhookService,
    CheckoutTokenService,
    PaymentsRepository,
    PaymentsService,
    SubscriptionExpiryService,
    SubscriptionStateService,
    SubscriptionsRepository,
    SyncCheckpointsRepository,
  ],
  exports: [
    BillingActionsService,
    BillingBackfillService,
    BillingDriftService,
    BillingApiClient,
    BillingCatalog,
    BillingWebhookService,
    CheckoutTokenService,
    SubscriptionExpiryService,
    SubscriptionsRepository,
  ],
})
export class BillingModule {}
