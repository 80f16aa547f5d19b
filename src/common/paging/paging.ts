/**
 * Paging, one rule for every list. User-facing lists (owned resources, API keys, the credit history)
 * normalise bad input (`PageQueryDto`); admin lists refuse it (`StrictPageQueryDto`, spec Errors). Both
 * cap the page so the SQL offset stays a safe integer.
 */
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

/** The rows a page covers, as a repository takes them. */
export const pageWindow = (request: PageRequest): { skip: number; take: number } => ({
  skip: pageOffset(request),
  take: request.pageSize,
});

/**
 * The page a validated query asks for, with the defaults filled in. Admin lists refuse bad values in
 * validation (`StrictPageQueryDto`), so what reaches here is already in range.
 */
export const pageRequest = (query: { page?: number; page_size?: number }): PageRequest => ({
  page: query.page ?? DEFAULT_PAGE,
  pageSize: query.page_size ?? DEFAULT_PAGE_SIZE,
});

/** The spec's list response for one page of rows. */
export const pageOf = <T>(items: T[], total: number, request: PageRequest): Page<T> => ({
  items,
  total,
  page: request.page,
  page_size: request.pageSize,
});
