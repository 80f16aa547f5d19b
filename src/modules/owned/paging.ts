export const DEFAULT_PAGE = 1;
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;
/** Far beyond any list a user can hold; keeps the SQL offset a safe integer. */
export const MAX_PAGE = 1_000_000_000;

export interface PageRequest {
  page: number;
  pageSize: number;
}

/** The spec's list response: `{items, total, page, page_size}`. */
export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  page_size: number;
}

/** A whole number written in plain decimal digits; anything else (abc, 1.5, 0x10, [] ...) is invalid. */
function wholeNumber(raw: unknown): number | null {
  if (typeof raw === 'number') return Number.isInteger(raw) ? raw : null;
  if (typeof raw !== 'string' || !/^\s*[+-]?\d+\s*$/.test(raw)) return null;
  return Number(raw);
}

/**
 * Owned lists never refuse paging input (spec, Limits): a page below 1 or not a number becomes 1. A page
 * past MAX_PAGE is served as MAX_PAGE (an empty page) instead of overflowing the offset.
 */
export function normalisePage(raw: unknown): number {
  const page = wholeNumber(raw);
  if (page === null || page < 1) return DEFAULT_PAGE;
  return Math.min(page, MAX_PAGE);
}

/** A page_size below 1, above 200 or not a number becomes 50. */
export function normalisePageSize(raw: unknown): number {
  const size = wholeNumber(raw);
  return size === null || size < 1 || size > MAX_PAGE_SIZE ? DEFAULT_PAGE_SIZE : size;
}

export const pageOffset = ({ page, pageSize }: PageRequest): number => (page - 1) * pageSize;
