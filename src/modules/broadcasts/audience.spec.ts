import { describe, expect, it } from '@jest/globals';
import type { User } from '../../generated/prisma/client.js';
import { audienceConditions, normalizeAudience, SqlParams, storedAudience } from './audience.js';
import { newBatchKey } from './broadcast-keys.js';
import { type SendContext, skipReason } from '../email/send-policy.js';

const tiers = ['FREE', 'PRO', 'TEAM'];

describe('audience', () => {
  it('normalizes: known tiers, lower-case deduplicated locales, ISO instants', () => {
    expect(
      normalizeAudience(
        { tiers: ['PRO', 'PRO'], locales: ['DE_at', 'de-AT', 'en'], signed_up_after: '2026-01-01' },
        tiers,
      ),
    ).toEqual({ tiers: ['PRO'], locales: ['de-at', 'en'], signed_up_after: '2026-01-01T00:00:00.000Z' });
    expect(() => normalizeAudience({ tiers: ['GOLD'] }, tiers)).toThrow(/unknown tier/);
    expect(() =>
      normalizeAudience(
        { signed_up_after: '2026-02-01T00:00:00Z', signed_up_before: '2026-02-01T00:00:00Z' },
        tiers,
      ),
    ).toThrow(/empty/);
  });

  it('reads back only the known criteria', () => {
    expect(storedAudience({ tiers: ['PRO'], evil: 'x', locales: [1] })).toEqual({ tiers: ['PRO'] });
    expect(storedAudience(null)).toEqual({});
  });

  it('always excludes soft-deleted users and passes every value as a parameter', () => {
    expect(audienceConditions({}, new SqlParams())).toEqual(['u.deleted_at IS NULL']);
    const params = new SqlParams();
    const sql = audienceConditions(
      { tiers: ["PRO'; DROP TABLE users; --"], locales: ['de'], signed_up_after: '2026-01-01T00:00:00.000Z' },
      params,
    ).join(' AND ');
    expect(sql).not.toContain('DROP');
    expect(sql).toContain('u.current_tier = ANY($1::text[])');
    expect(params.values).toEqual([
      ["PRO'; DROP TABLE users; --"],
      // `de` and the ISO 639-2 codes stored before aliases were replaced (users.md, locale).
      ['de', 'deu', 'ger'],
      ['de-%', 'deu-%', 'ger-%'],
      new Date('2026-01-01T00:00:00.000Z'),
    ]);
  });
});

describe('broadcast consent gate (the one send policy of email/, as broadcasts use it)', () => {
  const user = (over: Partial<User>) =>
    ({ deletedAt: null, emailDisposable: false, marketingConsentGiven: true, ...over }) as User;
  const broadcastSkipReason = (u: User, run: Omit<SendContext, 'broadcast'>, suppressed = false) =>
    skipReason(u, { ...run, broadcast: true }, suppressed);
  it('needs consent unless a transactional notice bypasses it; never reaches deleted users', () => {
    const marketing = { kind: 'marketing' as const, bypassConsent: false };
    const notice = { kind: 'transactional' as const, bypassConsent: true };
    expect(broadcastSkipReason(user({}), marketing)).toBeNull();
    expect(broadcastSkipReason(user({ marketingConsentGiven: false }), marketing)).toBe('no_consent');
    expect(broadcastSkipReason(user({ emailDisposable: true }), marketing)).toBe('disposable_address');
    expect(
      broadcastSkipReason(user({ marketingConsentGiven: false }), {
        kind: 'transactional',
        bypassConsent: false,
      }),
    ).toBe('no_consent');
    expect(
      broadcastSkipReason(user({ marketingConsentGiven: false, emailDisposable: true }), notice),
    ).toBeNull();
    expect(broadcastSkipReason(user({ deletedAt: new Date() }), notice)).toBe('user_deleted');
    // A marketing run can never bypass, even if the flag were stored.
    expect(
      broadcastSkipReason(user({ marketingConsentGiven: false }), { kind: 'marketing', bypassConsent: true }),
    ).toBe('no_consent');
    // A suppressed address is never mailed, bypass or not; a one-off transactional send is gated too.
    expect(broadcastSkipReason(user({}), notice, true)).toBe('suppressed');
    expect(broadcastSkipReason(user({}), marketing, true)).toBe('suppressed');
    expect(skipReason(user({ marketingConsentGiven: false }), { kind: 'transactional' }, false)).toBeNull();
    expect(skipReason(user({}), { kind: 'transactional' }, true)).toBe('suppressed');
  });

  it('draws a new batch idempotency key per batch, within the provider limit of 256 characters', () => {
    const run = '7b0e4b5e-8a4c-4e9e-9a55-0d2b7f1c2a11';
    expect(newBatchKey(run)).not.toBe(newBatchKey(run));
    expect(newBatchKey(run)).toMatch(new RegExp(`^broadcast/${run}/batch-[0-9a-f-]{36}$`));
    expect(newBatchKey(run).length).toBeLessThanOrEqual(256);
  });
});
