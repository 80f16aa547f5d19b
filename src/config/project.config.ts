// Project settings that are not secrets. Checked into the repository; the environment overrides them
// (see env.ts). Tier credits and limits are product decisions: change them here, not in code.

/** The tier without a subscription: it must exist, every other tier is paid. */
export const FREE_TIER = 'FREE';

export interface TierLimits {
  /** Metered language-model requests per minute (Redis rate limit). */
  aiRequestsPerMinute: number;
  /** Metered language-model requests per day (Redis quota). */
  aiRequestsPerDay: number;
  /** Upper bound of max_tokens a single completion may ask for. */
  maxTokensPerRequest: number;
  savedSearches: number;
  workspaces: number;
  apiKeys: number;
}

/** The billing cycles a price can be configured with (Paddle `billing_cycle` {interval, frequency: 1}). */
export const BILLING_CYCLES = ['month', 'year'] as const;
export type BillingCycle = (typeof BILLING_CYCLES)[number];

export interface TierConfig {
  /** Credits granted when a subscription to this tier starts and on every renewal. */
  monthlyCredits: number;
  /**
   * What happens to the unspent plan credits of a period when the next allowance arrives: `full` (they
   * roll over; the default), `none` (they expire) or `cap:<n>` (what exceeds n expires). Purchased credits
   * never expire. CREDIT_ROLLOVER overrides it per tier.
   */
  rollover?: string;
  limits: TierLimits;
}

export interface ProjectConfig {
  projectSlug: string;
  /** `TBD` is the boot-refusal sentinel: a deployed service must name its legal entity. */
  companyLegalName: string;
  adminEmails: string[];
  /** FREE must exist; every other key is a paid tier. */
  tiers: Record<string, TierConfig>;
  /** Billing price id -> tier. */
  priceTiers: Record<string, string>;
  /**
   * Billing price id -> its billing cycle (`month` or `year`, every 1), for the prices whose cycle is
   * configured (`BILLING_PRICE_TIERS=pri_pro_y:PRO:year`). Either every price of priceTiers has one or none
   * has (env.ts refuses a mix). A tier change keeps the subscription's cycle; see BillingCatalog.
   */
  priceCycles?: Record<string, BillingCycle>;
  /** One-time billing price id -> credits of the top-up pack (BILLING_CREDIT_PACKS overrides it). */
  creditPacks: Record<string, number>;
  /** Metric name -> user provenance prefix. Empty by default: lead-magnet numbers are then zero. */
  leadMagnetPrefixes: Record<string, string>;
  /** Credits charged per 1,000 language-model tokens (rounded up, at least 1 per call). */
  creditsPer1kTokens: number;
}

export const projectConfig: ProjectConfig = {
  projectSlug: 'subscription-service',
  companyLegalName: 'TBD',
  adminEmails: [],
  tiers: {
    FREE: {
      monthlyCredits: 0,
      limits: {
        aiRequestsPerMinute: 5,
        aiRequestsPerDay: 50,
        maxTokensPerRequest: 1024,
        savedSearches: 50,
        workspaces: 3,
        apiKeys: 2,
      },
    },
    PRO: {
      monthlyCredits: 1000,
      limits: {
        aiRequestsPerMinute: 60,
        aiRequestsPerDay: 5000,
        maxTokensPerRequest: 4096,
        savedSearches: 1000,
        workspaces: 20,
        apiKeys: 10,
      },
    },
    TEAM: {
      monthlyCredits: 5000,
      limits: {
        aiRequestsPerMinute: 300,
        aiRequestsPerDay: 50000,
        maxTokensPerRequest: 8192,
        savedSearches: 10000,
        workspaces: 200,
        apiKeys: 50,
      },
    },
  },
  priceTiers: { pri_pro: 'PRO', pri_team: 'TEAM' },
  creditPacks: {},
  leadMagnetPrefixes: {},
  creditsPer1kTokens: 1,
};
