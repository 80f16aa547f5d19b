import { ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { ApiEnum, ApiInt, ApiTimestamp, ApiUuid } from '../../../../common/openapi/api-fields.js';
import { TEMPLATE_KEYS } from '../../../email/email.templates.js';

const mapOf = (model: string | (new () => object), description: string) => ({
  type: 'object' as const,
  description,
  additionalProperties:
    typeof model === 'string' ? { type: model } : { $ref: getSchemaPath(model as new () => object) },
});

export class MrrTierDto {
  /** Monthly amount in minor units (cents). */
  @ApiInt({ example: 4900 })
  amount!: number;
  @ApiInt()
  subscriptions!: number;
}

export class MrrCurrencyDto {
  /** Monthly recurring revenue in minor units: ACTIVE plus PAST_DUE subscriptions not yet expired. */
  @ApiInt({ example: 14700 })
  total!: number;
  /** Part of total from ACTIVE subscriptions. */
  @ApiInt()
  active!: number;
  /** Part of total from PAST_DUE subscriptions (at risk: the provider is retrying the payment). */
  @ApiInt()
  past_due!: number;
  @ApiInt()
  subscriptions!: number;
  @ApiProperty(mapOf(MrrTierDto, 'Per tier'))
  by_tier!: Record<string, MrrTierDto>;
}

export class SubscriptionStatusCountsDto {
  @ApiInt()
  active!: number;
  @ApiInt()
  trialing!: number;
  @ApiInt()
  past_due!: number;
  @ApiInt()
  paused!: number;
  @ApiInt()
  canceled!: number;
  @ApiInt()
  total!: number;
}

export class MoneyTotalDto {
  /** Minor units (cents). */
  @ApiInt({ example: 4900 })
  amount!: number;
  @ApiInt()
  count!: number;
}

export class RevenueWindowDto {
  @ApiProperty(mapOf(MoneyTotalDto, 'Collected payments per currency'))
  revenue!: Record<string, MoneyTotalDto>;
  @ApiProperty(
    mapOf(
      MoneyTotalDto,
      'Approved refunds per currency; the refunds of one transaction count at most what its payment collected',
    ),
  )
  refunds!: Record<string, MoneyTotalDto>;
  @ApiProperty(mapOf('integer', 'revenue minus refunds per currency, minor units'))
  net!: Record<string, number>;
  /** Subscriptions canceled in the window. */
  @ApiInt()
  churned!: number;
  @ApiProperty(mapOf('integer', 'Monthly value of the churned subscriptions per currency, minor units'))
  churned_mrr!: Record<string, number>;
}

export class PackSalesDto {
  @ApiInt({ description: 'Top-up packs sold in the last 30 days', example: 12 })
  sold!: number;

  @ApiInt({ description: 'Credits those packs added', example: 9000 })
  credits!: number;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'integer' },
    description: 'What they were paid, minor units per ISO currency code',
    example: { USD: 12000 },
  })
  revenue!: Record<string, number>;
}

/** Credit movements summed over a window (the 30 days' totals carry no date). */
export class CreditTotalsDto {
  @ApiInt({ description: 'Plan allowances granted', example: 5000 })
  granted!: number;

  @ApiInt({ description: 'Credits bought in packs', example: 500 })
  purchased!: number;

  @ApiInt({ description: 'Credits spent, net of what settles and refunds gave back', example: 1200 })
  spent!: number;

  @ApiInt({ description: 'Plan credits expired by a rollover rule', example: 300 })
  expired!: number;

  @ApiInt({
    description: 'Credits taken back after refunds and chargebacks, net of what won chargebacks gave back',
    example: 0,
  })
  clawed_back!: number;
}

export class CreditDayDto extends CreditTotalsDto {
  @ApiProperty({ description: 'UTC date', example: '2026-11-24' })
  date!: string;
}

export class CreditsSectionDto {
  @ApiProperty({ type: CreditTotalsDto, description: 'Totals of the last 30 days' })
  last_30_days!: CreditTotalsDto;

  @ApiProperty({ type: [CreditDayDto], description: 'Per UTC day with any movement, oldest first' })
  by_day!: CreditDayDto[];
}

export class RevenueSectionDto {
  /** Every amount is an integer in the currency's minor unit; currencies are never mixed. */
  @ApiEnum(['minor_units'])
  amounts_in!: 'minor_units';
  @ApiProperty(mapOf(MrrCurrencyDto, 'MRR per ISO currency code'))
  mrr!: Record<string, MrrCurrencyDto>;
  /** MRR-eligible subscriptions without a price amount, currency or known interval (not in mrr). */
  @ApiInt()
  unpriced_subscriptions!: number;
  subscriptions!: SubscriptionStatusCountsDto;
  last_30_days!: RevenueWindowDto;
  @ApiProperty({ type: PackSalesDto, description: 'Top-up packs sold in the last 30 days' })
  packs!: PackSalesDto;
}

export class MailingWindowDto {
  @ApiInt()
  sent!: number;
  @ApiInt()
  failed!: number;
  @ApiInt()
  skipped!: number;
  /** Distinct users who withdrew marketing consent. */
  @ApiInt()
  unsubscribed!: number;
}

export class ConsentDto {
  /** Users (not soft-deleted) with marketing consent. */
  @ApiInt()
  consented!: number;
  /** Users not soft-deleted. */
  @ApiInt()
  users!: number;
}

export class BroadcastCountsDto {
  @ApiInt()
  recipients!: number;
  @ApiInt()
  sent!: number;
  @ApiInt()
  failed!: number;
  @ApiInt()
  skipped!: number;
}

export class LastBroadcastDto {
  @ApiUuid()
  id!: string;
  /** queued | running | done | failed */
  @ApiEnum(['queued', 'running', 'done', 'failed'])
  status!: string;
  @ApiEnum(TEMPLATE_KEYS)
  template_key!: string;
  @ApiEnum(['transactional', 'marketing'])
  kind!: string;
  @ApiTimestamp()
  created_at!: string;
  @ApiTimestamp({ nullable: true })
  started_at!: string | null;
  @ApiTimestamp({ nullable: true })
  finished_at!: string | null;
  counts!: BroadcastCountsDto;
}

export class DeliverabilityDayDto {
  @ApiProperty({ example: '2026-11-25', description: 'UTC day' })
  date!: string;
  @ApiInt({ example: 2, description: 'Bounces the e-mail provider reported (permanent and transient)' })
  bounces!: number;
  @ApiInt({ example: 1, description: 'Spam complaints (one per message)' })
  complaints!: number;
  @ApiInt({ example: 2, description: 'Addresses added to the suppression list' })
  suppressions!: number;
}

export class MailingSectionDto {
  last_7_days!: MailingWindowDto;
  last_30_days!: MailingWindowDto;
  /** consent.consented / consent.users, 0..1 (4 decimals). */
  @ApiProperty({ minimum: 0, maximum: 1, example: 0.4213 })
  consent_rate!: number;
  consent!: ConsentDto;
  @ApiProperty({ type: () => LastBroadcastDto, nullable: true })
  last_broadcast!: LastBroadcastDto | null;
  /** The last 30 UTC days, oldest first, every day listed. */
  @ApiProperty({ type: () => [DeliverabilityDayDto] })
  deliverability_by_day!: DeliverabilityDayDto[];
  /** Addresses on the suppression list now. */
  @ApiInt({ example: 12 })
  suppressed_addresses!: number;
}

export class ActivitySectionDto {
  /** Users (not soft-deleted) active in the last 24 h (last-active marker, at most an hour stale). */
  @ApiInt()
  dau!: number;
  @ApiInt()
  wau!: number;
  @ApiInt()
  mau!: number;
  dau_mau_ratio!: number;
}

export class SourceCountDto {
  /** Lower-cased utm_source; `direct` (attribution recorded without a source), `unknown`, or `other`. */
  source!: string;
  @ApiInt()
  signups!: number;
}

export class AcquisitionWindowDto {
  @ApiInt()
  signups!: number;
  /** Signups with an address on the disposable-domain list. */
  @ApiInt()
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
  @ApiInt()
  signups!: number;
  @ApiInt()
  signups_30d!: number;
  /** Of those signups, users with at least one collected payment. */
  @ApiInt()
  paid_conversions!: number;
  conversion_rate!: number;
}

export class LeadMagnetSectionDto {
  /** Users matching any configured prefix, counted once. */
  @ApiInt()
  signups!: number;
  @ApiInt()
  signups_30d!: number;
  @ApiInt()
  paid_conversions!: number;
  conversion_rate!: number;
  @ApiProperty(mapOf(LeadMagnetEntryDto, 'Per configured lead magnet (name -> numbers); empty by default'))
  by_prefix!: Record<string, LeadMagnetEntryDto>;
}

export class MetricsOverviewDto {
  /** The single instant every number is computed against. */
  @ApiTimestamp()
  generated_at!: string;
  revenue!: RevenueSectionDto;
  mailing!: MailingSectionDto;
  activity!: ActivitySectionDto;
  acquisition!: AcquisitionSectionDto;
  lead_magnet!: LeadMagnetSectionDto;
  @ApiProperty({ type: CreditsSectionDto, description: 'Credit ledger movements per day (last 30 days)' })
  credits!: CreditsSectionDto;
}
