import { describe, expect, it } from '@jest/globals';
import { identityEnvelope, identityUserData, primaryEmail } from './identity-events.js';
import { toExportJson } from './account-export.service.js';

describe('identity event schemas', () => {
  const data = (primary: string | null, addresses: [string, string][]) =>
    identityUserData.parse({
      id: 'user_1',
      primary_email_address_id: primary,
      email_addresses: addresses.map(([id, email_address]) => ({ id, email_address })),
    });

  it('picks the primary address, else the first, else none', () => {
    expect(
      primaryEmail(
        data('b', [
          ['a', 'a@example.com'],
          ['b', 'b@example.com'],
        ]),
      ),
    ).toBe('b@example.com');
    expect(primaryEmail(data('gone', [['a', 'a@example.com']]))).toBe('a@example.com');
    expect(primaryEmail(data(null, []))).toBeNull();
  });

  it('refuses malformed user data and envelopes', () => {
    expect(
      identityUserData.safeParse({ id: 'user_1', email_addresses: [{ id: 'a', email_address: 'nope' }] })
        .success,
    ).toBe(false);
    expect(identityUserData.safeParse({ id: '', email_addresses: [] }).success).toBe(false);
    expect(identityEnvelope.safeParse({ data: {} }).success).toBe(false);
    expect(identityEnvelope.safeParse({ type: 'user.created', data: [] }).success).toBe(false);
    expect(identityEnvelope.safeParse({ type: 'user.created', data: {}, extra: 1 }).success).toBe(true);
  });
});

describe('toExportJson', () => {
  it('snake-cases top-level keys only and writes dates as ISO strings', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    expect(toExportJson({ userId: 'u', createdAt: at, filters: { someKey: 1 }, delta: -1 })).toEqual({
      user_id: 'u',
      created_at: '2026-01-02T03:04:05.678Z',
      filters: { someKey: 1 },
      delta: -1,
    });
  });
});
