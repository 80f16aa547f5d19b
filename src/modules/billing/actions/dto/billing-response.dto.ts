import { ApiProperty } from '@nestjs/swagger';
import type { Subscription } from '../../../../generated/prisma/client.js';
import type { ProviderSubscription } from '../../billing-api.client.js';
import {
  ApiEmail,
  ApiEnum,
  ApiTier,
  ApiTimestamp,
  ApiUuid,
  SUBSCRIPTION_STATUSES,
} from '../../../../common/openapi/api-fields.js';

export class CheckoutTokenResponseDto {
  @ApiProperty({ type: String, example: 'ct_9b2f0c4e51d74a368f0e2d6c1a7b3e95.d3c1f0' })
  token!: string;
  @ApiTimestamp()
  expires_at!: string;
  /** The price to open the provider's checkout with (the tier's, for the requested billing cycle). */
  @ApiProperty({ type: String, example: 'pri_01h8441jn5pcwrfhwh78jqt8hk' })
  price_id!: string;
}

export class CheckoutCustomDataDto {
  @ApiProperty({ type: String, example: 'ct_9b2f0c4e51d74a368f0e2d6c1a7b3e95.d3c1f0' })
  checkout_token!: string;
}

export class CheckoutResponseDto {
  @ApiProperty({ type: String, example: 'pri_01h8441jn5pcwrfhwh78jqt8hk' })
  price_id!: string;
  @ApiEmail()
  customer_email!: string;
  custom_data!: CheckoutCustomDataDto;
  /** When the checkout token stops being accepted. */
  @ApiTimestamp()
  expires_at!: string;
}

export class ScheduledChangeDto {
  /** `cancel`, `pause` or `resume` (the provider's), or `tier_change` (a change to another paid tier). */
  @ApiEnum(['cancel', 'pause', 'resume', 'tier_change'])
  action!: string;
  @ApiTimestamp()
  effective_at!: string;
  @ApiTimestamp()
  resume_at!: string | null;
  /** The tier from effective_at on (action `tier_change` only). */
  @ApiTier()
  tier?: string;
}

export class SubscriptionResponseDto {
  @ApiUuid()
  id!: string;
  @ApiProperty({ type: String, example: 'sub_01h8441jn5pcwrfhwh78jqt8hk' })
  provider_subscription_id!: string;
  /** ACTIVE, TRIALING, PAST_DUE, PAUSED or CANCELED */
  @ApiEnum(SUBSCRIPTION_STATUSES)
  status!: string;
  @ApiTier()
  tier!: string;
  @ApiProperty({ type: String, example: 'pri_01h8441jn5pcwrfhwh78jqt8hk' })
  price_id!: string;
  @ApiTimestamp()
  current_period_start!: string | null;
  @ApiTimestamp()
  current_period_end!: string | null;
  @ApiTimestamp()
  canceled_at!: string | null;
  scheduled_change!: ScheduledChangeDto | null;
}

/** What the provider accepted; local state follows when its webhook arrives. */
export class BillingActionResponseDto {
  @ApiUuid()
  subscription_id!: string;
  @ApiProperty({ type: String, example: 'sub_01h8441jn5pcwrfhwh78jqt8hk' })
  provider_subscription_id!: string;
  @ApiEnum(['cancel', 'change', 'resume'])
  action!: string;
  @ApiTimestamp()
  effective_from!: string | null;
  @ApiTier()
  target_tier!: string | null;
  @ApiProperty({ type: String, example: 'active' })
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
