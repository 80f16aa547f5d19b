import { describe, expect, it } from '@jest/globals';
import { restorableOf, reversedShare, splitClawBack } from './clawback-restore.js';

describe('splitClawBack', () => {
  it('takes plan credits first, then purchased ones, then below zero', () => {
    const before = { balance: 1000, purchased: 500, allowance: 'first-period:sub_1' };
    expect(splitClawBack(before, 300, false)).toEqual({
      unspent: 300,
      purchased: 0,
      allowance: 'first-period:sub_1',
      left: 200,
    });
    expect(splitClawBack(before, 2000, false)).toEqual({
      unspent: 500,
      purchased: 500,
      allowance: 'first-period:sub_1',
      left: 0,
    });
  });

  it("takes a pack's purchased credits first", () => {
    const before = { balance: 1000, purchased: 500, allowance: null };
    expect(splitClawBack(before, 700, true)).toEqual({
      unspent: 200,
      purchased: 500,
      allowance: null,
      left: 300,
    });
  });

  it('counts all of it as spent credits when the balance is already below zero', () => {
    expect(splitClawBack({ balance: -100, purchased: 0, allowance: 'a' }, 400, false)).toEqual({
      unspent: 0,
      purchased: 0,
      allowance: 'a',
      left: 0,
    });
  });
});

describe('restorableOf', () => {
  const split = { unspent: 400, purchased: 100, allowance: 'a', left: 300 };
  const taken = 1000;

  it('gives everything back under full, or while the allowance is current', () => {
    expect(
      restorableOf({ taken, split, rule: { kind: 'full' }, current: false, expiredSince: true }),
    ).toEqual({
      restorable: 1000,
      expired: 0,
    });
    expect(
      restorableOf({ taken, split, rule: { kind: 'none' }, current: true, expiredSince: false }),
    ).toEqual({
      restorable: 1000,
      expired: 0,
    });
  });

  it('under none, once the allowance closed, keeps the spent and purchased parts only', () => {
    expect(
      restorableOf({ taken, split, rule: { kind: 'none' }, current: false, expiredSince: false }),
    ).toEqual({
      restorable: 600,
      expired: 400,
    });
  });

  it('under cap, once the allowance closed, adds what the cap had room for above what was left', () => {
    const cap = { kind: 'cap', cap: 500 } as const;
    expect(restorableOf({ taken, split, rule: cap, current: false, expiredSince: false })).toEqual({
      restorable: 800,
      expired: 200,
    });
    // A close since expired credits: the user's own were over the cap already.
    expect(restorableOf({ taken, split, rule: cap, current: false, expiredSince: true })).toEqual({
      restorable: 600,
      expired: 400,
    });
  });

  it('reads a claw-back recorded without its split as unspent plan credits of a closed allowance', () => {
    expect(
      restorableOf({ taken, split: null, rule: { kind: 'none' }, current: true, expiredSince: false }),
    ).toEqual({ restorable: 0, expired: 1000 });
    expect(
      restorableOf({ taken, split: null, rule: { kind: 'full' }, current: false, expiredSince: false }),
    ).toEqual({ restorable: 1000, expired: 0 });
  });
});

describe('reversedShare', () => {
  it('gives all of it for a whole reverse, its share rounded down for a part, nothing for none', () => {
    expect(reversedShare(1000, { reversed: 18_000, charged: 18_000 })).toBe(1000);
    expect(reversedShare(1000, { reversed: 20_000, charged: 18_000 })).toBe(1000);
    expect(reversedShare(1000, { reversed: 1, charged: 3 })).toBe(333);
    expect(reversedShare(1000, { reversed: 0, charged: 18_000 })).toBe(0);
    expect(reversedShare(0, { reversed: 18_000, charged: 18_000 })).toBe(0);
  });
});

describe('restorableOf with reservations open at the claw-back', () => {
  const none = { kind: 'none' } as const;
  const cap = { kind: 'cap', cap: 700 } as const;
  // 1000 of month 0, 600 held by a call in flight: the chargeback took 400 unspent and 600 below zero.
  const split = { unspent: 400, purchased: 0, allowance: 'm0', left: 0, held: 600, holds: 'ai-1:0' };

  it('counts what the calls gave back as unspent plan credits, as if they had failed before it', () => {
    const closed = { taken: 1000, split, current: false, expiredSince: false };
    expect(restorableOf({ ...closed, rule: none, returned: 600 })).toEqual({ restorable: 0, expired: 1000 });
    expect(restorableOf({ ...closed, rule: cap, returned: 600 })).toEqual({ restorable: 700, expired: 300 });
    // Settled at 100: the 100 charged were spent and come back in full.
    expect(restorableOf({ ...closed, rule: none, returned: 500 })).toEqual({ restorable: 100, expired: 900 });
    // Nothing given back yet (still in flight), or the month still current: as before.
    expect(restorableOf({ ...closed, rule: none })).toEqual({ restorable: 600, expired: 400 });
    expect(restorableOf({ ...closed, current: true, rule: none, returned: 600 })).toEqual({
      restorable: 1000,
      expired: 0,
    });
  });

  it('counts what the calls gave back beyond the hole as unspent credits the claw-back left', () => {
    // 300 taken of 400 unspent, 600 held: the returned 600 are left (cap room 700 - 100 - 600 = 0).
    const small = { unspent: 300, purchased: 0, allowance: 'm0', left: 100, held: 600, holds: 'ai-1:0' };
    const input = { taken: 300, split: small, current: false, expiredSince: false, returned: 600 };
    expect(restorableOf({ ...input, rule: cap })).toEqual({ restorable: 0, expired: 300 });
  });
});
