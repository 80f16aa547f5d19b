import { describe, expect, it } from '@jest/globals';
import { DAY_MS, ratio, topWithOther, windowsEndingAt } from './metric-windows.js';
import { monthlyAmount } from './mrr.js';
import { coveringPrefixes, likePrefix } from './user-metrics.repository.js';

describe('windowsEndingAt', () => {
  it('derives every bound from the one instant given, in whole 24 h days', () => {
    const now = new Date('2026-03-29T01:30:00.000Z'); // a DST change in Europe: irrelevant in UTC
    const w = windowsEndingAt(now);
    expect(w.now).toBe(now);
    expect(now.getTime() - w.since1d.getTime()).toBe(DAY_MS);
    expect(now.getTime() - w.since7d.getTime()).toBe(7 * DAY_MS);
    expect(now.getTime() - w.since30d.getTime()).toBe(30 * DAY_MS);
  });
});

describe('ratio', () => {
  it('rounds to 4 decimals and answers 0 instead of NaN', () => {
    expect(ratio(1, 3)).toBe(0.3333);
    expect(ratio(2, 3)).toBe(0.6667);
    expect(ratio(0, 0)).toBe(0);
    expect(ratio(5, 5)).toBe(1);
  });
});

describe('topWithOther', () => {
  it('keeps the largest counts, ties by key, and folds the rest into other', () => {
    const counts = [
      { key: 'b', count: 1 },
      { key: 'a', count: 1 },
      { key: 'z', count: 5 },
      { key: 'c', count: 2 },
      { key: 'none', count: 0 },
    ];
    expect(topWithOther(counts, 2)).toEqual([
      { key: 'z', count: 5 },
      { key: 'c', count: 2 },
      { key: 'other', count: 2 },
    ]);
    expect(topWithOther(counts, 10)).toEqual([
      { key: 'z', count: 5 },
      { key: 'c', count: 2 },
      { key: 'a', count: 1 },
      { key: 'b', count: 1 },
    ]);
  });
});

describe('monthlyAmount', () => {
  it('normalises day, week, month and year prices to a month, divided by the billing frequency', () => {
    expect(monthlyAmount(1000, 'month', 1)).toBe(1000);
    expect(monthlyAmount(3000, 'month', 3)).toBe(1000);
    expect(monthlyAmount(12000, 'year', 1)).toBe(1000);
    expect(monthlyAmount(24000, 'YEAR', 2)).toBe(1000);
    expect(monthlyAmount(1200, 'week', 1)).toBeCloseTo(5200, 9);
    expect(monthlyAmount(120, 'day', 1)).toBeCloseTo(3650, 9);
  });

  it('treats a missing or zero frequency as 1 and refuses to guess an unknown interval', () => {
    expect(monthlyAmount(1000, 'month', null)).toBe(1000);
    expect(monthlyAmount(1000, 'month', 0)).toBe(1000);
    expect(monthlyAmount(1000, 'fortnight', 1)).toBeNull();
    expect(monthlyAmount(1000, null, 1)).toBeNull();
  });
});

describe('lead-magnet prefixes', () => {
  it('escapes LIKE wildcards so a prefix matches literally', () => {
    expect(likePrefix('lm_')).toBe('lm\\_%');
    expect(likePrefix('50%_off\\x')).toBe('50\\%\\_off\\\\x%');
  });

  it('keeps only the prefixes no shorter prefix already covers', () => {
    expect(coveringPrefixes(['lm_ebook_', 'lm_', 'pod_', 'lm_webinar', 'pod_'])).toEqual(['lm_', 'pod_']);
    expect(coveringPrefixes(['a', 'b'])).toEqual(['a', 'b']);
  });
});
