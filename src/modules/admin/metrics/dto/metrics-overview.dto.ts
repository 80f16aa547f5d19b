import { ApiProperty, getSchemaPath } from '@nestjs/swagger';

const mapOf = (model: string | (new () => object), description: string) => ({
  type: 'object' as const,
  description,
  additionalProperties:
    typeof model === 'string' ? { type: model } : { $ref: getSchemaPath(model as new () => object) },
});

export class MrrTierDto {
  /** Monthly amount in minor units (cents). */
  amount!: number;
  subscriptions!: number;
}

export class MrrCurrencyDto {
  /** Monthly recurring revenue in minor units: ACTIVE plus PAST_DUE subscriptions not yet expired. */
  total!: number;
  /** Part of total from ACTIVE subscriptions. */
  active!: number;
  /** Part of total from PAST_DUE subscriptions (at risk: the provider is retrying the payment). */
  past_due!: number;
  subscriptions!: number;
  @ApiProperty(mapOf(MrrTierDto, 'Per tier'))
  by_tier!: Record<string, MrrTierDto>;
}

export class SubscriptionStatusCountsDto {
  active!: number;
  trialing!: number;
  past_due!: number;
  paused!: number;
  canceled!: number;
  total!: number;
}

export class MoneyTotalDto {
  /** Minor units (cents). */
  amount!: number;
  count!: number;
}

export class RevenueWindowDto {
  @ApiProperty(mapOf(MoneyTotalDto, 'Collected payments per currency'))
  revenue!: Record<string, MoneyTotalDto>;
  @ApiProperty(mapOf(MoneyTotalDto, 'Approved refunds per currency'))
  refunds!: Record<string, MoneyTotalDto>;
  @ApiProperty(mapOf('integer', 'revenue minus refunds per currency, minor units'))
  net!: Record<string, number>;
  /** Subscriptions canceled in the window. */
  churned!: number;
  @ApiProperty(mapOf('integer', 'Monthly value of the churned subscriptions per currency, minor units'))
  churned_mrr!: Record<string, number>;
}

export class RevenueSectionDto {
  /** Every amount is an integer in the currency's minor unit; currencies are never mixed. */
  amounts_in!: 'minor_units';
  @ApiProperty(mapOf(MrrCurrencyDto, 'MRR per ISO currency code'))
  mrr!: Record<string, MrrCurrencyDto>;
  /** MRR-eligible subscriptions without a price amount, currency or known interval (not in mrr). */
  unpriced_subscriptions!: number;
  subscriptions!: SubscriptionStatusCountsDto;
  last_30_days!: RevenueWindowDto;
}

export class MailingWindowDto {
  sent!: number;
  failed!: number;
  skipped!: number;
  /** Distinct users who withdrew marketing consent. */
  unsubscribed!: number;
}

export class ConsentDto {
  /** Users (not soft-deleted) with marketing consent. */
  consented!: number;
  /** Users not soft-deleted. */
  users!: number;
}

export class BroadcastCountsDto {
  recipients!: number;
  sent!: number;
  failed!: number;
  skipped!: number;
}

export class LastBroadcastDto {
  id!: string;
  /** queued | running | done | failed */
  status!: string;
  template_key!: string;
  kind!: string;
  created_at!: string;
  @ApiProperty({ type: String, nullable: true })
  started_at!: string | null;
  @ApiProperty({ type: String, nullable: true })
  finished_at!: string | null;
  counts!: BroadcastCountsDto;
}

export class DeliverabilityDayDto {
  @ApiProperty({ example: '2026-11-25', description: 'UTC day' })
  date!: string;
  @ApiProperty({ example: 2, description: 'Bounces the e-mail provider reported (permanent and transient)' })
  bounces!: number;
  @ApiProperty({ example: 1, description: 'Spam complaints (one per message)' })
  complaints!: number;
  @ApiProperty({ example: 2, description: 'Addresses added to the suppression list' })
  suppressions!: number;
}

export class MailingSectionDto {
  last_7_days!: MailingWindowDto;
  last_30_days!: MailingWindowDto;
  /** consent.consented / consent.users, 0..1 (4 decimals). */
  consent_rate!: number;
  consent!: ConsentDto;
  @ApiProperty({ type: () => LastBroadcastDto, nullable: true })
  last_broadcast!: LastBroadcastDto | null;
  /** The last 30 UTC days, oldest first, every day listed. */
  @ApiProperty({ type: () => [DeliverabilityDayDto] })
  deliverability_by_day!: DeliverabilityDayDto[];
  /** Addresses on the suppression list now. */
  @ApiProperty({ example: 12 })
  suppressed_addresses!: number;
}

export class ActivitySectionDto {
  /** Users (not soft-deleted) active in the last 24 h (last-active marker, at most an hour stale). */
  dau!: number;
  wau!: number;
  mau!: number;
  dau_mau_ratio!: number;
}

export class SourceCountDto {
  /** Lower-cased utm_source; `direct` (attribution recorded without a source), `unknown`, or `other`. */
  source!: string;
  signups!: number;
}

export class AcquisitionWindowDto {
  signups!: number;
  /** Signups with an address on the disposable-domain list. */
  disposable!: number;
  disposable_share!: number;
  /** Top 10 sources by signups, then `other` with the rest. */
  @ApiProperty({ type: () => [SourceCountDto] })
  by_utm_source!: SourceCountDto[];
}

export class AcquisitionSectionDto {
  last_7_days!: AcquisitionWindowDto;
  last_30_days!: AcquisitionWindowDto;
}

export class LeadMagnetEntryDto {
  prefix!: string;
  /** All-time signups whose provenance starts with the prefix. */
  signups!: number;
  signups_30d!: number;
  /** Of those signups, users with at least one collected payment. */
  paid_conversions!: number;
  conversion_rate!: number;
}

export class LeadMagnetSectionDto {
  /** Users matching any configured prefix, counted once. */
  signups!: number;
  signups_30d!: number;
  paid_conversions!: number;
  conversion_rate!: number;
  @ApiProperty(mapOf(LeadMagnetEntryDto, 'Per configured lead magnet (name -> numbers); empty by default'))
  by_prefix!: Record<string, LeadMagnetEntryDto>;
}

export class MetricsOverviewDto {
  /** The single instant every number is computed against. */
  generated_at!: string;
  revenue!: RevenueSectionDto;
  mailing!: MailingSectionDto;
  activity!: ActivitySectionDto;
  acquisition!: AcquisitionSectionDto;
  lead_magnet!: LeadMagnetSectionDto;
}
