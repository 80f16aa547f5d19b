/** What a blocklist may look like before we refuse it as "not a blocklist". */
export const BLOCKLIST_LIMITS = {
  /** More entries than this is not a disposable-domain list (the maintained one has about 9,000). */
  maxEntries: 1_000_000,
  /** Fewer than this is a truncated or placeholder answer. */
  minEntries: 100,
  /** A refresh may not shrink the active list below this share of it in one step. */
  minShareOfCurrent: 0.5,
  /** Share of lines that may fail the domain check (stray typos upstream) before the list is refused. */
  maxInvalidShare: 0.01,
} as const;

export class BlocklistError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlocklistError';
  }
}

const DOMAIN =
  /^(?=.{4,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

export const isDomainName = (value: string): boolean => DOMAIN.test(value);

/**
 * Parses a downloaded blocklist. Two shapes are accepted: plain text with one domain per line (`#`
 * comments allowed; the format of the upstream disposable-email-domains project) or a JSON array of
 * strings (the format of the npm package we ship). Anything else, or a list with more than a few
 * malformed lines (an HTML error page served with 200, say), is refused as a whole.
 */
export function parseBlocklist(body: unknown): string[] {
  let entries: unknown[];
  if (Array.isArray(body)) entries = body;
  else if (typeof body === 'string')
    entries = body
      .split(/\r?\n/)
      .map((line) => line.replace(/#.*$/, '').trim())
      .filter((line) => line.length > 0);
  else throw new BlocklistError('expected plain text with one domain per line or a JSON array of domains');

  if (entries.length > BLOCKLIST_LIMITS.maxEntries) {
    throw new BlocklistError(
      `the list has ${entries.length} entries, more than ${BLOCKLIST_LIMITS.maxEntries}`,
    );
  }
  const domains = new Set<string>();
  let invalid = 0;
  for (const entry of entries) {
    const domain = typeof entry === 'string' ? entry.trim().toLowerCase().replace(/\.$/, '') : '';
    if (isDomainName(domain)) domains.add(domain);
    else invalid += 1;
  }
  if (invalid > Math.max(3, entries.length * BLOCKLIST_LIMITS.maxInvalidShare)) {
    throw new BlocklistError(`${invalid} of ${entries.length} entries are not domain names`);
  }
  if (domains.size < BLOCKLIST_LIMITS.minEntries) {
    throw new BlocklistError(
      `the list has ${domains.size} domains, fewer than ${BLOCKLIST_LIMITS.minEntries}`,
    );
  }
  return [...domains].sort();
}

/** The address's domain and its parents down to two labels: `a.b.mailinator.com` is caught by `mailinator.com`. */
export function domainCandidates(email: string): string[] {
  const at = email.lastIndexOf('@');
  if (at < 0) return [];
  const labels = email
    .slice(at + 1)
    .trim()
    .toLowerCase()
    .replace(/\.$/, '')
    .split('.');
  const candidates: string[] = [];
  for (let i = 0; i <= labels.length - 2; i += 1) candidates.push(labels.slice(i).join('.'));
  return candidates;
}
