import { describe, expect, it } from '@jest/globals';
import { creditSummaryOf } from './credit-summary.js';

/** DESIGN 5c: plan_expires_at is when unspent plan credits expire, null when they never do. */
describe('creditSummaryOf', () => {
  const now = new Date('2026-12-07T12:00:00Z');
  const ahead = new Date('2026-12-20T00:00:00Z');
  const past = new Date('2026-11-01T08:00:00Z');
  const row = { creditBalance: 1200, purchasedCredits: 200, planExpiresAt: ahead, currentTier: 'PRO' };

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

  it('has neither plan nor purchased credits on a negative balance', () => {
    expect(creditSummaryOf({ ...row, creditBalance: -40 }, now)).toEqual({
      balance: -40,
      planRemaining: 0,
      purchasedRemaining: 0,
      planExpiresAt: null,
    });
  });
});
