import { describe, expect, it } from '@jest/globals';
import { domainCandidates, parseBlocklist } from './blocklist.js';

const many = (n: number) => Array.from({ length: n }, (_, i) => `x${i}.example-temp.com`);

describe('parseBlocklist', () => {
  it('reads plain text with comments and blank lines, and JSON arrays, lower-cased and deduplicated', () => {
    const text = `# header\n${many(150).join('\r\n')}\nMailinator.COM.\nmailinator.com # dup\n\n`;
    const parsed = parseBlocklist(text);
    expect(parsed).toHaveLength(151);
    expect(parsed).toContain('mailinator.com');
    expect(parseBlocklist([...many(150), 'xn--80ak6aa92e.com'])).toContain('xn--80ak6aa92e.com');
  });

  it('refuses anything that is not a plausible list', () => {
    expect(() => parseBlocklist({ domains: many(200) })).toThrow(/expected plain text/);
    expect(() => parseBlocklist(42)).toThrow();
    expect(() => parseBlocklist(many(99))).toThrow(/fewer than/);
    expect(() => parseBlocklist([...many(200), 'not a domain', '<html>', 'a..b.com', 'x.c'])).toThrow(
      /not domain names/,
    );
    expect(() => parseBlocklist([...many(200), 7, null])).not.toThrow();
  });
});

describe('domainCandidates', () => {
  it('lists the domain and its parents down to two labels', () => {
    expect(domainCandidates('A@Inbox.Mailinator.COM')).toEqual(['inbox.mailinator.com', 'mailinator.com']);
    expect(domainCandidates('a@example.com')).toEqual(['example.com']);
    expect(domainCandidates('no-at-sign')).toEqual([]);
  });
});
