import { describe, expect, it } from '@jest/globals';
import {
  addMonths,
  allowanceJobId,
  dueMonths,
  monthEnd,
  monthsInPeriod,
  nearestPayment,
} from './allowance-months.js';

describe('allowance months', () => {
  it('adds calendar months in UTC, clamping the day to shorter months', () => {
    expect(addMonths(new Date('2026-01-31T10:00:00Z'), 1).toISOString()).toBe('2026-02-28T10:00:00.000Z');
    expect(addMonths(new Date('2028-01-31T10:00:00Z'), 1).toISOString()).toBe('2028-02-29T10:00:00.000Z');
    expect(addMonths(new Date('2026-11-15T00:00:00Z'), 3).toISOString()).toBe('2027-02-15T00:00:00.000Z');
  });

  it('counts 12 months in a year, 1 in a month, 3 in a quarter', () => {
    expect([monthsInPeriod('year', 1), monthsInPeriod('month', 1), monthsInPeriod('month', 3)]).toEqual([
      12, 1, 3,
    ]);
    expect([monthsInPeriod('week', 2), monthsInPeriod(null, null)]).toEqual([1, 1]);
  });

  it('lists the anniversaries that have come, inside the period only', () => {
    const start = new Date('2026-01-15T12:00:00Z');
    const end = addMonths(start, 12);
    const period = { start, end, interval: 'year', frequency: 1 };
    expect(dueMonths(period, new Date('2026-01-20T00:00:00Z'))).toEqual([]);
    expect(dueMonths(period, new Date('2026-03-15T12:00:00Z'))).toEqual([1, 2]);
    expect(dueMonths(period, new Date('2026-03-15T11:59:59Z'))).toEqual([1]);
    expect(dueMonths(period, new Date('2030-01-01T00:00:00Z'))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(dueMonths({ ...period, interval: 'month' }, new Date('2030-01-01T00:00:00Z'))).toEqual([]);
    expect(dueMonths({ ...period, end: addMonths(start, 4) }, new Date('2030-01-01T00:00:00Z'))).toEqual([
      1, 2, 3,
    ]);
  });

  it('names the allowance by subscription, period start and month; a month ends at the next anniversary', () => {
    const start = new Date('2026-01-15T12:00:00Z');
    expect(allowanceJobId('sub_1', start, 3)).toBe('allowance:sub_1:2026-01-15T12:00:00.000Z:3');
    expect(monthEnd(start, 0, addMonths(start, 12)).toISOString()).toBe('2026-02-15T12:00:00.000Z');
    expect(monthEnd(start, 0, new Date('2026-02-01T00:00:00Z')).toISOString()).toBe(
      '2026-02-01T00:00:00.000Z',
    );
  });

  it('takes the payment nearest the period start as the one that paid it; of two as near, the one after', () => {
    const start = new Date('2026-01-15T12:00:00Z');
    const pay = (id: string, at: string) => ({ providerTransactionId: id, occurredAt: new Date(at) });
    expect(nearestPayment([], start)).toBeUndefined();
    const first = pay('txn_b', '2026-01-15T12:00:05Z');
    const later = pay('txn_a', '2026-01-20T00:00:00Z');
    expect(nearestPayment([later, first], start)).toBe(first);
    const before = pay('txn_z', '2026-01-15T11:59:55Z');
    expect(nearestPayment([first, before], start)).toBe(first);
    expect(nearestPayment([before, first], start)).toBe(first);
    const twin = pay('txn_a', '2026-01-15T12:00:05Z');
    expect(nearestPayment([first, before, twin], start)).toBe(twin);
    const nearer = pay('txn_x', '2026-01-15T11:59:58Z');
    expect(nearestPayment([first, nearer], start)).toBe(nearer);
  });
});
