import { FREE_TIER } from '../../config/project.config.js';
import { monthsInPeriod } from '../billing/jobs/allowance-months.js';

/** The balance split into plan and purchased credits (`GET /api/v1/credits`, the account export). */
export interface CreditSummary {
  balance: number;
  planRemaining: number;
  purchasedRemaining: number;
  planExpiresAt: Date | null;
}

/** A subscription of the user, as far as the allowance after the current one goes (allowanceFollows). */
export interface PlanSubscription {
  status: string;
  expiredAt: Date | null;
  currentPeriodEnd: Date | null;
  billingInterval: string | null;
  billingFrequency: number | null;
  /** The provider's `scheduled_change` as stored: `{action, effective_at, resume_at}` or null. */
  scheduledChange: unknown;
}

/** Statuses under which the allowance job grants a multi-month period's later months (multiMonthPeriods). */
const MONTHLY_JOB_STATUSES = ['ACTIVE', 'TRIALING', 'PAST_DUE', 'CANCELED'];
/** Statuses that renew at the period end: the renewal's transaction.completed grants the next allowance. */
const RENEWING_STATUSES = ['ACTIVE', 'TRIALING', 'PAST_DUE'];
/** Scheduled changes that stop a subscription at its period end, before any renewal. */
const STOPPING_CHANGES = ['cancel', 'pause'];

/**
 * Whether an allowance is granted when the current one ends at `at`: only a new allowance closes the plan
 * credits (grantAllowance), and nothing else ever expires them. One comes from a subscription that is not
 * expired and either has a later month of a multi-month period left after `at` (the allowance job grants
 * it, scheduled cancel or not), or renews at its period end: live, and no cancel or pause scheduled for
 * that end (Paddle applies either at the period end, and then no renewal comes). A canceled subscription
 * drops the user to FREE, a paused one grants nothing; the plan credits stay until some later allowance
 * (a new subscription, a resume) closes them, which no date can tell. A pending change to another paid
 * tier still renews: the renewal closes the current allowance under that allowance's own tier's rule.
 */
export function allowanceFollows(at: Date, subscriptions: readonly PlanSubscription[]): boolean {
  return subscriptions.some((s) => {
    if (s.expiredAt) return false;
    const laterMonth =
      MONTHLY_JOB_STATUSES.includes(s.status) &&
      monthsInPeriod(s.billingInterval, s.billingFrequency) > 1 &&
      !!s.currentPeriodEnd &&
      at.getTime() < s.currentPeriodEnd.getTime();
    if (laterMonth) return true;
    const action = (s.scheduledChange as { action?: unknown } | null)?.action;
    return RENEWING_STATUSES.includes(s.status) && !STOPPING_CHANGES.includes(action as string);
  });
}

/**
 * Purchased credits are spent last, so of a positive balance the purchased part is what is left of it and
 * the rest is plan credits; a negative balance (after a claw-back) has neither.
 *
 * `planExpiresAt` is when the next allowance closes the plan credits (the rule `none` or `cap`), and null
 * when they never do (DESIGN 5c): on FREE, where the subscription has lapsed and no allowance follows;
 * when no allowance follows the current one (allowanceFollows: a cancel or pause is scheduled for the
 * period end, or the subscription is paused); and once the stored date is past, where none came (in the
 * hour after a month boundary the allowance job has not run yet and will set the next date). This is the
 * one rule for `GET /api/v1/credits` and the account export (both read CreditsService.summary).
 */
export function creditSummaryOf(
  row: {
    creditBalance: number;
    purchasedCredits: number;
    planExpiresAt: Date | null;
    currentTier: string;
    subscriptions: readonly PlanSubscription[];
  },
  now = new Date(),
): CreditSummary {
  const balance = row.creditBalance;
  const purchased = Math.min(Math.max(row.purchasedCredits, 0), Math.max(balance, 0));
  const planRemaining = Math.max(balance - purchased, 0);
  const expiresAt =
    planRemaining > 0 &&
    row.currentTier !== FREE_TIER &&
    row.planExpiresAt &&
    row.planExpiresAt > now &&
    allowanceFollows(row.planExpiresAt, row.subscriptions)
      ? row.planExpiresAt
      : null;
  return { balance, planRemaining, purchasedRemaining: purchased, planExpiresAt: expiresAt };
}
