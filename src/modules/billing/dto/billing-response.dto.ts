import type { Subscription } from '../../../generated/prisma/client.js';
import type { ProviderSubscription } from '../billing-api.client.js';

export class CheckoutTokenResponseDto {
  token!: string;
  expires_at!: string;
}

export class CheckoutCustomDataDto {
  checkout_token!: string;
}

export class CheckoutResponseDto {
  price_id!: string;
  customer_email!: string;
  custom_data!: CheckoutCustomDataDto;
  /** When the checkout token stops being accepted. */
  expires_at!: string;
}

export class ScheduledChangeDto {
  /** `cancel`, `pause` or `resume` (the provider's), or `tier_change` (a change to another paid tier). */
  action!: string;
  effective_at!: string;
  resume_at!: string | null;
  /** The tier from effective_at on (action `tier_change` only). */
  tier?: string;
}

export class SubscriptionResponseDto {
  id!: string;
  provider_subscription_id!: string;
  /** ACTIVE, TRIALING, PAST_DUE, PAUSED or CANCELED */
  status!: string;
  tier!: string;
  price_id!: string;
  current_period_start!: string | null;
  current_period_end!: string | null;
  canceled_at!: string | null;
  scheduled_change!: ScheduledChangeDto | null;
}

/** What the provider accepted; local state follows when its webhook arrives. */
export class BillingActionResponseDto {
  subscription_id!: string;
  provider_subscription_id!: string;
  action!: string;
  effective_from!: string | null;
  target_tier!: string | null;
  provider_status!: string;
  scheduled_change!: ScheduledChangeDto | null;
}

const iso = (value: Date | null) => value?.toISOString() ?? null;

export function toSubscriptionResponse(row: Subscription): SubscriptionResponseDto {
  return {
    id: row.id,
    provider_subscription_id: row.providerSubscriptionId,
    status: row.status,
    tier: row.tier,
    price_id: row.priceId,
    current_period_start: iso(row.currentPeriodStart),
    current_period_end: iso(row.currentPeriodEnd),
    canceled_at: iso(row.canceledAt),
    scheduled_change: scheduledChangeOf(row),
  };
}

/**
 * The provider's scheduled change (a cancel at period end wins: the tier change would never start), else
 * a pending change to another paid tier.
 */
function scheduledChangeOf(row: Subscription): ScheduledChangeDto | null {
  const provider = row.scheduledChange as ScheduledChangeDto | null;
  if (provider) return provider;
  if (row.pendingTier && row.pendingTierAt) {
    return {
      action: 'tier_change',
      tier: row.pendingTier,
      effective_at: row.pendingTierAt.toISOString(),
      resume_at: null,
    };
  }
  return null;
}

export function toActionResponse(
  row: Subscription,
  action: string,
  provider: ProviderSubscription,
  extra: { effectiveFrom?: string; targetTier?: string } = {},
): BillingActionResponseDto {
  return {
    subscription_id: row.id,
    provider_subscription_id: row.providerSubscriptionId,
    action,
    effective_from: extra.effectiveFrom ?? null,
    target_tier: extra.targetTier ?? null,
    provider_status: provider.status,
    scheduled_change: provider.scheduled_change
      ? {
          action: provider.scheduled_change.action,
          effective_at: provider.scheduled_change.effective_at,
          resume_at: provider.scheduled_change.resume_at ?? null,
        }
      : null,
  };
}
