import { describe, expect, it } from '@jest/globals';
import { allowanceFollows, creditSummaryOf, type PlanSubscription } from './credit-summary.js';

/** DESIGN 5c: plan_expires_at is when unspent plan credits expire, null when they never do. */
describe('creditSummaryOf', () => {
  const now = new Date('2026-12-07T12:00:00Z');
  const ahead = new Date('2026-12-20T00:00:00Z');
  const past = new Date('2026-11-01T08:00:00Z');
  /** A monthly subscription renewing at `ahead`, the end of the current allowance. */
  const monthly: PlanSubscription = {
    status: 'ACTIVE',
    expiredAt: null,
    currentPeriodEnd: ahead,
    billingInterval: 'month',
    billingFrequency: 1,
    scheduledChange: null,
  };
  const row = {
    creditBalance: 1200,
    purchasedCredits: 200,
    planExpiresAt: ahead,
    currentTier: 'PRO',
    subscriptions: [monthly],
  };

  it('splits the balance into plan and purchased credits and dates the plan credits on a paid tier', () => {
    expect(creditSummaryOf(row, now)).toEqual({
      balance: 1200,
      planRemaining: 1000,
      purchasedRemaining: 200,
      planExpiresAt: ahead,
    });
  });

  it('dates nothing when no allowance will close the plan credits', () => {
    // The subscription lapsed: the user is on FREE and no allowance follows (an acceptance run saw a date).
    expect(creditSummaryOf({ ...row, currentTier: 'FREE' }, now).planExpiresAt).toBeNull();
    // A paused subscription grants nothing: its last date passed without an allowance closing them.
    expect(creditSummaryOf({ ...row, planExpiresAt: past }, now).planExpiresAt).toBeNull();
    expect(creditSummaryOf({ ...row, planExpiresAt: now }, now).planExpiresAt).toBeNull();
    // Under `full` there is no date; with no plan credits left there is nothing to expire.
    expect(creditSummaryOf({ ...row, planExpiresAt: null }, now).planExpiresAt).toBeNull();
    expect(creditSummaryOf({ ...row, creditBalance: 150 }, now)).toEqual({
      balance: 150,
      planRemaining: 0,
      purchasedRemaining: 150,
      planExpiresAt: null,
    });
  });

  it('dates nothing when the subscription stops at the period end instead of renewing', () => {
    const cancel = { action: 'cancel', effective_at: ahead.toISOString(), resume_at: null };
    const pause = { action: 'pause', effective_at: ahead.toISOString(), resume_at: null };
    for (const scheduledChange of [cancel, pause]) {
      expect(creditSummaryOf({ ...row, subscriptions: [{ ...monthly, scheduledChange }] }, now)).toEqual({
        balance: 1200,
        planRemaining: 1000,
        purchasedRemaining: 200,
        planExpiresAt: null,
      });
    }
    // Paused, canceled or expired: no renewal comes.
    for (const stopped of [
      { ...monthly, status: 'PAUSED' },
      { ...monthly, status: 'CANCELED' },
      { ...monthly, expiredAt: past },
    ]) {
      expect(creditSummaryOf({ ...row, subscriptions: [stopped] }, now).planExpiresAt).toBeNull();
    }
    expect(creditSummaryOf({ ...row, subscriptions: [] }, now).planExpiresAt).toBeNull();
  });

  it('keeps the date while an allowance still follows it', () => {
    const cancel = { action: 'cancel', effective_at: '2027-06-01T00:00:00.000Z', resume_at: null };
    const annual = {
      ...monthly,
      billingInterval: 'year',
      currentPeriodEnd: new Date('2027-06-01T00:00:00Z'),
      scheduledChange: cancel,
    };
    // An annual period canceled at its end still gets its later months from the allowance job.
    expect(allowanceFollows(ahead, [annual])).toBe(true);
    expect(allowanceFollows(ahead, [{ ...annual, status: 'CANCELED' }])).toBe(true);
    // Its last month ends with the period: nothing follows.
    expect(allowanceFollows(annual.currentPeriodEnd, [annual])).toBe(false);
    expect(allowanceFollows(ahead, [{ ...annual, status: 'PAUSED' }])).toBe(false);
    // A scheduled resume, a past-due renewal still being collected, a trial: they renew.
    const resume = { action: 'resume', effective_at: ahead.toISOString(), resume_at: ahead.toISOString() };
    expect(allowanceFollows(ahead, [{ ...monthly, scheduledChange: resume }])).toBe(true);
    expect(allowanceFollows(ahead, [{ ...monthly, status: 'PAST_DUE' }])).toBe(true);
    expect(allowanceFollows(ahead, [{ ...monthly, status: 'TRIALING' }])).toBe(true);
    // One live subscription of several is enough.
    expect(allowanceFollows(ahead, [{ ...monthly, scheduledChange: cancel }, monthly])).toBe(true);
  });

  it('has neither plan nor purchased credits on a negative balance', () => {
    expect(creditSummaryOf({ ...row, creditBalance: -40 }, now)).toEqual({
      balance: -40,
      planRemaining: 0,
      purchasedRemaining: 0,
      planExpiresAt: null,
    });
  });
});
