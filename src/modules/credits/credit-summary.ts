import { FREE_TIER } from '../../config/project.config.js';

/** The balance split into plan and purchased credits (`GET /api/v1/credits`, the account export). */
export interface CreditSummary {
  balance: number;
  planRemaining: number;
  purchasedRemaining: number;
  planExpiresAt: Date | null;
}

/**
 * Purchased credits are spent last, so of a positive balance the purchased part is what is left of it and
 * the rest is plan credits; a negative balance (after a claw-back) has neither.
 *
 * `planExpiresAt` is when the next allowance closes the plan credits (the rule `none` or `cap`), and null
 * when they never do (DESIGN 5c): also on FREE, where the subscription has lapsed and no allowance follows,
 * and once the stored date is past, where none came (a paused subscription grants nothing; in the hour
 * after a month boundary the allowance job has not run yet and will set the next date).
 */
export function creditSummaryOf(
  row: {
    creditBalance: number;
    purchasedCredits: number;
    planExpiresAt: Date | null;
    currentTier: string;
  },
  now = new Date(),
): CreditSummary {
  const balance = row.creditBalance;
  const purchased = Math.min(Math.max(row.purchasedCredits, 0), Math.max(balance, 0));
  const planRemaining = Math.max(balance - purchased, 0);
  const expiresAt =
    planRemaining > 0 && row.currentTier !== FREE_TIER && row.planExpiresAt && row.planExpiresAt > now
      ? row.planExpiresAt
      : null;
  return { balance, planRemaining, purchasedRemaining: purchased, planExpiresAt: expiresAt };
}
