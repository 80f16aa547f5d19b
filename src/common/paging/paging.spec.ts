import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE,
  MAX_PAGE_SIZE,
  normalisePage,
  normalisePageSize,
  pageOffset,
} from './paging.js';

describe('user-facing list paging normalisation (spec, Limits)', () => {
  it.each([
    [undefined, 1],
    ['1', 1],
    ['7', 7],
    [' 3 ', 3],
    ['+2', 2],
    ['0', 1],
    ['-1', 1],
    ['abc', 1],
    ['', 1],
    ['1.5', 1],
    ['0x10', 1],
    ['1e3', 1],
    [['2', '3'], 1],
    [4, 4],
    [2.5, 1],
    ['9'.repeat(40), MAX_PAGE],
  ])('page %p becomes %p', (raw, expected) => {
    expect(normalisePage(raw)).toBe(expected);
  });

  it.each([
    [undefined, 50],
    ['1', 1],
    ['50', 50],
    ['200', 200],
    ['201', 50],
    ['0', 50],
    ['-5', 50],
    ['abc', 50],
    ['12.5', 50],
    [['10'], 50],
    ['9'.repeat(40), 50],
  ])('page_size %p becomes %p', (raw, expected) => {
    expect(normalisePageSize(raw)).toBe(expected);
  });

  it('always yields a usable page and page size, and a safe offset, for any input', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(undefined)), (raw) => {
        const page = normalisePage(raw);
        const pageSize = normalisePageSize(raw);
        expect(Number.isSafeInteger(page) && page >= 1 && page <= MAX_PAGE).toBe(true);
        expect(Number.isSafeInteger(pageSize) && pageSize >= 1 && pageSize <= MAX_PAGE_SIZE).toBe(true);
        expect(Number.isSafeInteger(pageOffset({ page, pageSize }))).toBe(true);
      }),
    );
    expect(normalisePageSize('x')).toBe(DEFAULT_PAGE_SIZE);
  });
});
