import { describe, expect, it } from '@jest/globals';
import { clawBackShare, expiringClawBackShare } from './clawback-share.js';

describe('clawBackShare', () => {
  it('takes exactly the refunded share when it is whole (a float ratio rounded 210.00000000000003 up to 211)', () => {
    expect(3000 * (70 / 1000)).toBeGreaterThan(210);
    expect(clawBackShare(3000, { refunded: 70, paid: 1000 })).toBe(210);
    expect(clawBackShare(1000, { refunded: 700, paid: 1000 })).toBe(700);
    expect(clawBackShare(500, { refunded: 290, paid: 1000 })).toBe(145);
  });

  it('rounds a share that is not whole up', () => {
    // The credit lifecycle's partial refund: 100 of 1500 paid for 1000 credits.
    expect(clawBackShare(1000, { refunded: 100, paid: 1500 })).toBe(67);
    expect(clawBackShare(3000, { refunded: 71, paid: 1000 })).toBe(213);
  });

  it('takes everything for a full refund, a refund of the whole amount or more, and a payment of 0', () => {
    expect(clawBackShare(3000, null)).toBe(3000);
    expect(clawBackShare(3000, { refunded: 1000, paid: 1000 })).toBe(3000);
    expect(clawBackShare(3000, { refunded: 1200, paid: 1000 })).toBe(3000);
    expect(clawBackShare(3000, { refunded: 0, paid: 0 })).toBe(3000);
  });

  it('takes one credit for a tiny refund and nothing for none', () => {
    expect(clawBackShare(3000, { refunded: 1, paid: 1000 })).toBe(3);
    expect(clawBackShare(1000, { refunded: 1, paid: 1_000_000 })).toBe(1);
    expect(clawBackShare(1000, { refunded: 0, paid: 1500 })).toBe(0);
    expect(clawBackShare(0, { refunded: 700, paid: 1000 })).toBe(0);
  });

  it('stays exact where the product passes 2^53', () => {
    const max = 2_147_483_647;
    // Integer arithmetic on numbers makes the first max; the float ratio makes the second 1_999_999_998.
    expect(clawBackShare(max, { refunded: max - 1, paid: max })).toBe(max - 1);
    expect(clawBackShare(2_000_000_000, { refunded: 1_999_999_999, paid: 2_000_000_001 })).toBe(
      1_999_999_999,
    );
    expect(clawBackShare(max, { refunded: 3, paid: max })).toBe(3);
  });
});

describe('expiringClawBackShare', () => {
  const paid = 18_000;

  it('is the share of what did not expire when nothing expired or nothing was taken back before', () => {
    // Refunds in order under `full` (4000 then 5000): the second takes its share of the full 2000, 556.
    const inOrder = { full: 2000, expired: 0, left: 1554, refunded: 5000, paid, reflected: 4000 };
    expect(expiringClawBackShare(inOrder)).toBe(clawBackShare(2000, { refunded: 5000, paid }));
    expect(expiringClawBackShare(inOrder)).toBe(556);
    // A first refund after a month expired unspent: half of the 1000 not expired.
    const first = { full: 2000, expired: 1000, left: 1000, refunded: 9000, paid, reflected: 0 };
    expect(expiringClawBackShare(first)).toBe(500);
  });

  it('counts credits that expired after a refund at their full-month value (the review repro)', () => {
    // Half refunded in month 0 (500 taken), months 1 and 2 granted 500 (500 withheld each), 500 expiring at
    // each: 3000 at full amounts, 1000 expired standing for 2000, 500 left. A quarter more: 250, not 500.
    const repro = { full: 3000, expired: 1000, left: 500, refunded: 4500, paid, reflected: 9000 };
    expect(expiringClawBackShare(repro)).toBe(250);
    expect(clawBackShare(3000 - 1000, { refunded: 4500, paid })).toBe(500);
  });

  it('counts credits that expired before any refund at their face value', () => {
    // Months 0 and 1 expired unspent (2000) before the first refund took half of month 2; a quarter more.
    const before = { full: 3000, expired: 2000, left: 500, refunded: 4500, paid, reflected: 9000 };
    expect(expiringClawBackShare(before)).toBe(250);
  });

  it('never counts an expired credit at more than the money still kept makes it, nor takes below 0', () => {
    // Nothing left: the expired 1000 count at most 2000 of the 3000; the share is of the other 1000.
    expect(
      expiringClawBackShare({ full: 3000, expired: 1000, left: 0, refunded: 4500, paid, reflected: 9000 }),
    ).toBe(250);
    expect(
      expiringClawBackShare({ full: 1000, expired: 1000, left: 0, refunded: 4500, paid, reflected: 9000 }),
    ).toBe(0);
  });

  it('takes everything of what did not expire for a refund of the whole amount', () => {
    expect(
      expiringClawBackShare({ full: 3000, expired: 1000, left: 500, refunded: paid, paid, reflected: 9000 }),
    ).toBe(2000);
  });
});
