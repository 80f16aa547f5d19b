import { describe, expect, it } from '@jest/globals';
import { normalisePage, normalisePageSize } from './list-credits.dto.js';

describe('ledger paging normalisation', () => {
  it('resets pages below 1 and non-numbers to 1', () => {
    expect([undefined, '0', '-1', 'abc', '1.5', '', ['2']].map(normalisePage)).toEqual([1, 1, 1, 1, 1, 1, 1]);
    expect(normalisePage('3')).toBe(3);
  });

  it('resets page sizes outside 1..200 and non-numbers to 50', () => {
    expect(['0', '201', 'x', '-5', '9999999999'].map(normalisePageSize)).toEqual([50, 50, 50, 50, 50]);
    expect(['1', '200', ' 20 '].map(normalisePageSize)).toEqual([1, 200, 20]);
  });
});
