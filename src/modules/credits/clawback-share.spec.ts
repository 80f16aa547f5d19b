import { describe, expect, it } from '@jest/globals';
import { clawBackShare } from './clawback-share.js';

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
