import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import {
  archivableIdentityPayload,
  identityEnvelope,
  identityUserData,
  primaryEmail,
} from './identity-events.js';
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

describe('archivableIdentityPayload', () => {
  // Clerk's published user.created example (test/contracts/fixtures/clerk).
  const clerk = () =>
    JSON.parse(
      readFileSync(join(process.cwd(), 'test/contracts/fixtures/clerk/user.created.json'), 'utf8'),
    ) as Record<string, Record<string, unknown>>;

  it('keeps ids, type, timestamps and e-mail addresses with their verification status', () => {
    const event = clerk();
    expect(archivableIdentityPayload(event)).toEqual({
      type: 'user.created',
      object: 'event',
      timestamp: 1654012591835,
      data: {
        id: 'user_29w83sxmDNGwOuEthce5gg56FcC',
        object: 'user',
        created_at: 1654012591514,
        updated_at: 1654012591835,
        last_sign_in_at: 1654012591514,
        primary_email_address_id: 'idn_29w83yL7CwVlJXylYLxcslromF1',
        email_addresses: [
          {
            id: 'idn_29w83yL7CwVlJXylYLxcslromF1',
            object: 'email_address',
            email_address: 'example@example.org',
            verification: { status: 'verified', strategy: 'ticket' },
          },
        ],
      },
    });
  });

  it('drops names, phones, images, metadata, request attributes and any field added later', () => {
    const event = clerk();
    event.data.phone_numbers = [{ id: 'idn_phone', phone_number: '+15555550100' }];
    event.data.unsafe_metadata = { street: '1 Main St' };
    event.data.new_field = 'Jane';
    const text = JSON.stringify(archivableIdentityPayload(event));
    for (const leak of [
      'Example',
      '+15555550100',
      'img.clerk.com',
      'gravatar',
      '1 Main St',
      'Jane',
      '0.0.0.0',
    ])
      expect({ leak, found: text.includes(leak) }).toEqual({ leak, found: false });
  });

  it('keeps the deletion marker and survives bodies that are not objects', () => {
    expect(
      archivableIdentityPayload({ type: 'user.deleted', data: { id: 'user_1', deleted: true } }),
    ).toEqual({
      type: 'user.deleted',
      data: { id: 'user_1', deleted: true },
    });
    expect(archivableIdentityPayload(['x'])).toEqual({ not_an_object: true });
    expect(archivableIdentityPayload({ unparsable: true })).toEqual({ unparsable: true });
    expect(archivableIdentityPayload({ type: 'user.created', data: 'Jane' })).toEqual({
      type: 'user.created',
    });
  });
});
