import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';

export const FREE_TIER = 'FREE';

/** A lookup in a configured table that never reaches Object.prototype (`constructor`, `__proto__`). */
const own = <T>(table: Record<string, T>, key: string): T | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined;

/**
 * Tiers and prices from the project configuration: which tiers can be bought, the price of a tier, the
 * tier of a price, and how tiers rank when a user holds several subscriptions at once.
 */
@Injectable()
export class BillingCatalog {
  constructor(private readonly config: AppConfig) {}

  /** Tier of a billing price id, or null when the price is not configured. */
  tierForPrice(priceId: string): string | null {
    return own(this.config.project.priceTiers, priceId) ?? null;
  }

  /** The configured price of a paid tier (the first one listed), or null. */
  priceForTier(tier: string): string | null {
    const entry = Object.entries(this.config.project.priceTiers).find(([, t]) => t === tier);
    return entry ? entry[0] : null;
  }

  /** A paid tier that has a price and can therefore be bought. */
  isPurchasable(tier: string): boolean {
    return (
      tier !== FREE_TIER &&
      own(this.config.project.tiers, tier) !== undefined &&
      this.priceForTier(tier) !== null
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
