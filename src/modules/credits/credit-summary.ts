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
 */
export function creditSummaryOf(row: {
  creditBalance: number;
  purchasedCredits: number;
  planExpiresAt: Date | null;
}): CreditSummary {
  const balance = row.creditBalance;
  const purchased = Math.min(Math.max(row.purchasedCredits, 0), Math.max(balance, 0));
  const planRemaining = Math.max(balance - purchased, 0);
  return {
    balance,
    planRemaining,
    purchasedRemaining: purchased,
    planExpiresAt: planRemaining > 0 ? row.planExpiresAt : null,
  };
}
