import { describe, expect, it } from '@jest/globals';
import { AUDIT_DETAIL_KEYS, curateDetails, fieldsChanged } from './audit.details.js';

describe('curateDetails (the audit details allowlist)', () => {
  it('keeps allowlisted keys with primitive values as they are', () => {
    expect(
      curateDetails({ tier: 'PRO', credits: 100, cancel_immediately: false, error: null, reason: '' }),
    ).toEqual({ tier: 'PRO', credits: 100, cancel_immediately: false, error: null, reason: '' });
  });

  it('drops keys that are not on the allowlist', () => {
    expect(
      curateDetails({
        tier: 'PRO',
        email: 'someone@example.com',
        token: 'secret',
        body: '{"password":"x"}',
        Tier: 'case matters',
      }),
    ).toEqual({ tier: 'PRO' });
  });

  it('drops nested objects, even under an allowlisted key', () => {
    expect(
      curateDetails({
        reason: { text: 'nested', email: 'someone@example.com' },
        status: new Date('2026-11-22T00:00:00Z'),
        fields_changed: [{ name: 'email', value: 'someone@example.com' }, 'locale', ['nested']],
        source: 'webhook',
      }),
    ).toEqual({ fields_changed: ['locale'], source: 'webhook' });
  });

  it('clips strings to 500 characters, in values and in list items', () => {
    const long = 'x'.repeat(600);
    const curated = curateDetails({ error: long, fields_changed: [long] });
    expect(curated.error).toBe('x'.repeat(500));
    expect(curated.fields_changed).toEqual(['x'.repeat(500)]);
  });

  it('never keeps half a surrogate pair, and escapes what jsonb cannot hold', () => {
    const curated = curateDetails({ error: `${'x'.repeat(499)}😀`, reason: 'a\u0000\ud800' });
    expect(curated.error).toBe('x'.repeat(499));
    expect(curated.reason).toBe('a\\u0000\\ud800');
  });

  it('keeps at most 50 list items, of primitives only, without nulls', () => {
    const many = Array.from({ length: 80 }, (_, i) => `field_${i}`);
    expect(curateDetails({ fields_changed: many }).fields_changed).toEqual(many.slice(0, 50));
    expect(curateDetails({ audience_tiers: ['PRO', null, 3, true, undefined, { tier: 'TEAM' }] })).toEqual({
      audience_tiers: ['PRO', 3, true],
    });
    expect(curateDetails({ audience_tiers: [] })).toEqual({ audience_tiers: [] });
  });

  it('drops values JSON cannot hold faithfully (non-finite numbers, undefined, functions)', () => {
    expect(
      curateDetails({
        amount: Number.NaN,
        count: Number.POSITIVE_INFINITY,
        credits: undefined,
        sent: () => 1,
        failed: 2,
      }),
    ).toEqual({ failed: 2 });
  });

  it('accepts no details at all', () => {
    expect(curateDetails(undefined)).toEqual({});
    expect(curateDetails({})).toEqual({});
  });

  it('allowlists only snake_case names (plain detail keys)', () => {
    for (const key of AUDIT_DETAIL_KEYS) expect(key).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });
});

describe('fieldsChanged', () => {
  it('lists the defined fields of a patch, sorted', () => {
    expect(
      fieldsChanged({ locale: 'de', marketing_consent_given: undefined, email: 'a@example.com' }),
    ).toEqual(['email', 'locale']);
  });
});
