import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { type BillingCycle, FREE_TIER } from '../../config/project.config.js';

export { FREE_TIER };

/** A lookup in a configured table that never reaches Object.prototype (`constructor`, `__proto__`). */
const own = <T>(table: Record<string, T>, key: string): T | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined;

/**
 * Tiers and prices from the project configuration: which tiers can be bought, the price of a tier for a
 * billing cycle, the tier of a price, and how tiers rank when a user holds several subscriptions at once.
 */
@Injectable()
export class BillingCatalog {
  constructor(private readonly config: AppConfig) {}

  /** Tier of a billing price id, or null when the price is not configured. */
  tierForPrice(priceId: string): string | null {
    return own(this.config.project.priceTiers, priceId) ?? null;
  }

  /** The configured billing cycle of a price, or null when the configuration does not name one. */
  cycleOfPrice(priceId: string): BillingCycle | null {
    return own(this.config.project.priceCycles ?? {}, priceId) ?? null;
  }

  /** The prices of a tier with their configured cycles, in configuration order. */
  pricesOfTier(tier: string): { priceId: string; cycle: BillingCycle | null }[] {
    return Object.entries(this.config.project.priceTiers)
      .filter(([, t]) => t === tier)
      .map(([priceId]) => ({ priceId, cycle: this.cycleOfPrice(priceId) }));
  }

  /**
   * The price a checkout of `tier` sells. With `cycle`: the tier's price configured with that cycle, or
   * null when it has none (a price whose cycle is not configured is never sold as monthly or yearly).
   * Without: the tier's first monthly price, else its first price (what it was before cycles existed).
   */
  checkoutPrice(tier: string, cycle?: BillingCycle): string | null {
    const prices = this.pricesOfTier(tier);
    if (cycle !== undefined) return prices.find((p) => p.cycle === cycle)?.priceId ?? null;
    return (prices.find((p) => p.cycle === 'month') ?? prices[0])?.priceId ?? null;
  }

  /**
   * The price of `tier` for a subscription billed every `cycle` (see cycleOf), which a change to another
   * tier keeps: the tier's price configured with that cycle. When no price of the tier names a cycle (a
   * configuration from before cycles existed), the tier's only price, for a monthly subscription (or one
   * whose cycle is unknown) only: prices were monthly before cycles existed, and taking it for a yearly
   * subscriber is the silent move to monthly billing this rule exists to prevent. Several prices whose
   * cycles are not configured could bill any cycle, so then none. Null: no price keeps the cycle; the
   * caller must refuse rather than move the subscriber to another cycle.
   */
  priceForCycle(tier: string, cycle: string | null): string | null {
    const prices = this.pricesOfTier(tier);
    const match = prices.find((p) => p.cycle !== null && p.cycle === cycle);
    if (match) return match.priceId;
    const unconfigured = prices.length === 1 && prices[0].cycle === null;
    return unconfigured && (cycle === null || cycle === 'month') ? prices[0].priceId : null;
  }

  /** True when the configuration names no billing cycle for any price of `tier` (BILLING_PRICE_TIERS). */
  cyclesUnnamed(tier: string): boolean {
    return this.pricesOfTier(tier).every((price) => price.cycle === null);
  }

  /**
   * The billing cycle of a subscription: the provider's (the row's billing_interval and
   * billing_frequency, from its price), else the configured cycle of its price, else null (unknown).
   * `month` and `year` for every 1 month or year; `<interval>*<frequency>` otherwise (no configured price
   * has such a cycle).
   */
  cycleOf(subscription: {
    priceId: string;
    billingInterval: string | null;
    billingFrequency: number | null;
  }): string | null {
    if (subscription.billingInterval) {
      const interval = subscription.billingInterval.toLowerCase();
      const frequency = subscription.billingFrequency ?? 1;
      return frequency === 1 ? interval : `${interval}*${frequency}`;
    }
    return this.cycleOfPrice(subscription.priceId);
  }

  /** A paid tier that has a price and can therefore be bought. */
  isPurchasable(tier: string): boolean {
    return (
      tier !== FREE_TIER &&
      own(this.config.project.tiers, tier) !== undefined &&
      this.pricesOfTier(tier).length > 0
    );
  }

  purchasableTiers(): string[] {
    return Object.keys(this.config.project.tiers).filter((tier) => this.isPurchasable(tier));
  }

  /** Credits of a top-up pack price, or null when the price is not a pack. */
  packCredits(priceId: string): number | null {
    return own(this.config.project.creditPacks, priceId) ?? null;
  }

  /** The configured packs, in configuration order. */
  creditPacks(): { priceId: string; credits: number }[] {
    return Object.entries(this.config.project.creditPacks).map(([priceId, credits]) => ({
      priceId,
      credits,
    }));
  }

  monthlyCredits(tier: string): number {
    return own(this.config.project.tiers, tier)?.monthlyCredits ?? 0;
  }

  /**
   * The tier a user gets from the tiers of the subscriptions that currently grant access: the richest
   * one (by monthly credits, then by name so the choice is deterministic), FREE when there is none.
   */
  bestTier(tiers: string[]): string {
    const known = tiers.filter(
      (tier) => tier !== FREE_TIER && own(this.config.project.tiers, tier) !== undefined,
    );
    if (known.length === 0) return FREE_TIER;
    return [...known].sort(
      (a, b) => this.monthlyCredits(b) - this.monthlyCredits(a) || a.localeCompare(b),
    )[0];
  }
}

/**
 * The `tier` claim of a pack's checkout token: it names the pack, so a subscription's token (a tier) or
 * another pack's token never pays out a pack.
 */
export const packClaim = (priceId: string): string => `pack:${priceId}`;
