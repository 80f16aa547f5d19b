import { describe, expect, it } from '@jest/globals';
import { expiringCredits, parseRollover } from './rollover.js';

describe('rollover rules', () => {
  it('parses full, none and cap:<n>, refuses anything else', () => {
    expect(parseRollover(undefined)).toEqual({ kind: 'full' });
    expect(parseRollover(' NONE ')).toEqual({ kind: 'none' });
    expect(parseRollover('cap:2000')).toEqual({ kind: 'cap', cap: 2000 });
    expect(['cap:', 'cap:-1', 'some', 'cap:1.5'].map(parseRollover)).toEqual([null, null, null, null]);
  });

  it('expires all of the unspent plan credits under none, what exceeds the cap under cap, nothing under full', () => {
    expect(expiringCredits({ kind: 'none' }, 730)).toBe(730);
    expect(expiringCredits({ kind: 'cap', cap: 500 }, 730)).toBe(230);
    expect(expiringCredits({ kind: 'cap', cap: 500 }, 300)).toBe(0);
    expect(expiringCredits({ kind: 'full' }, 730)).toBe(0);
    expect(expiringCredits({ kind: 'none' }, -40)).toBe(0);
  });
});
