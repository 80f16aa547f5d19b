import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsNotEmpty, IsOptional, IsString, MaxLength, ValidateIf } from 'class-validator';
import { ApiEnum, ApiTier, PAID_TIERS } from '../../../../common/openapi/api-fields.js';
import { BILLING_CYCLES, type BillingCycle } from '../../../../config/project.config.js';

export class CheckoutRequestDto {
  /** Paid tier to buy (FREE is not sold; the allowed values come from the project configuration). */
  @IsString()
  @IsNotEmpty()
  @MaxLength(50)
  @ApiEnum(PAID_TIERS)
  tier!: string;

  /**
   * How often the subscription bills: the tier's price with this billing cycle (`BILLING_PRICE_TIERS`
   * `price:TIER:month|year`); 400 when the tier has none. Left out: the tier's first monthly price, else
   * its first configured price.
   */
  // Optional but never null: @IsOptional would let null through to pick a price with no configured cycle.
  @ValidateIf((_object, value) => value !== undefined)
  @IsIn(BILLING_CYCLES)
  @ApiEnum(BILLING_CYCLES, { example: 'year' })
  billing_cycle?: BillingCycle;
}

export class CancelSubscriptionDto {
  /** true: end the subscription now and downgrade when the provider confirms; false: at period end. */
  @IsOptional()
  @IsBoolean()
  @ApiProperty({ example: false })
  cancel_immediately?: boolean = false;
}

export class ChangeSubscriptionDto {
  /** Any configured tier; FREE cancels at the end of the period. */
  @IsString()
  @IsNotEmpty()
  @MaxLength(50)
  @ApiTier({ example: 'TEAM' })
  target_tier!: string;
}

/** The spec shows no body for resume; an empty object is accepted and anything else refused. */
export class ResumeSubscriptionDto {}
