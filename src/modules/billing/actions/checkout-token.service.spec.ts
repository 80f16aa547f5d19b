import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { loadConfig } from '../../../config/env.js';
import { CheckoutTokenService } from './checkout-token.service.js';

const SECRET = 'checkout-token-unit-test-secret-000000000';
const config = loadConfig({ APP_ENV: 'test', BILLING_WEBHOOK_SECRET: SECRET });
const tokens = new CheckoutTokenService(config);
const now = new Date('2026-11-22T10:00:00Z');
const USER_1 = '0b6f3c52-1d0e-4a8e-9a7e-5f3c2b1a0d91';
const USER_2 = '7c1e9d04-6b2a-4f3e-8c5d-2a9b0e4f6d13';

/** A token signed with the configured secret over any claims (what only the secret's holder can make). */
const signed = (claims: unknown) => {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
};

describe('CheckoutTokenService', () => {
  it('round-trips user, tier, expiry and a fresh nonce', () => {
    const a = tokens.issue(USER_1, 'PRO', now);
    const b = tokens.issue(USER_1, 'PRO', now);
    expect(a.token).not.toBe(b.token);
    expect(a.expiresAt.toISOString()).toBe('2026-11-22T11:00:00.000Z');
    const check = tokens.verify(a.token, now);
    expect(check).toMatchObject({
      ok: true,
      claims: { userId: USER_1, tier: 'PRO', expiresAt: a.expiresAt },
    });
    if (check.ok) expect(check.claims.nonce.length).toBeGreaterThanOrEqual(16);
  });

  it('expires at exp, judged at the given instant', () => {
    const { token, expiresAt } = tokens.issue(USER_1, 'PRO', now);
    expect(tokens.verify(token, new Date(expiresAt.getTime() - 1)).ok).toBe(true);
    expect(tokens.verify(token, expiresAt)).toEqual({ ok: false, reason: 'expired' });
  });

  it('authenticates an expired token (ownership needs only the signature) but nothing forged', () => {
    const { token, expiresAt } = tokens.issue(USER_1, 'PRO', now);
    expect(tokens.authenticate(token)).toMatchObject({ ok: true, claims: { userId: USER_1, expiresAt } });
    expect(tokens.verify(token, new Date(expiresAt.getTime() + 86_400_000))).toEqual({
      ok: false,
      reason: 'expired',
    });
    const [body, sig] = token.split('.');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, u: USER_2 })).toString('base64url');
    expect(tokens.authenticate(`${forgedBody}.${sig}`)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(tokens.authenticate(`${body}.${'A'.repeat(43)}`)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(tokens.authenticate('a.b.c')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses tampered claims, foreign keys and garbage', () => {
    const { token } = tokens.issue(USER_1, 'PRO', now);
    const [body, sig] = token.split('.');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, u: USER_2 })).toString('base64url');
    expect(tokens.verify(`${forgedBody}.${sig}`, now)).toEqual({ ok: false, reason: 'bad_signature' });
    const other = new CheckoutTokenService(
      loadConfig({ APP_ENV: 'test', BILLING_WEBHOOK_SECRET: 'another-secret-of-enough-length-00000000' }),
    );
    expect(other.verify(token, now)).toEqual({ ok: false, reason: 'bad_signature' });
    for (const garbage of ['', 'abc', 'a.b.c', `${body}.`, `.${sig}`, 'x'.repeat(2000)]) {
      expect(tokens.verify(garbage, now).ok).toBe(false);
    }
  });

  it('refuses an authentic token whose claims issue() would never write as malformed', () => {
    const exp = Math.floor(now.getTime() / 1000) + 3600;
    const good = { u: USER_1, t: 'PRO', exp, n: 'AAAAAAAAAAAAAAAA' };
    expect(tokens.authenticate(signed(good))).toMatchObject({ ok: true, claims: { userId: USER_1 } });
    expect(tokens.authenticate(signed({ ...good, t: 'pack:pri_pack_s' })).ok).toBe(true);
    const bad: unknown[] = [
      { ...good, u: 'not-a-uuid' },
      { ...good, u: 'a\u0000' },
      { ...good, u: '\ud800' },
      { ...good, u: `${USER_1}\u0000` },
      { ...good, u: 'x'.repeat(300) },
      { ...good, u: 7 },
      { ...good, exp: 1e20 },
      { ...good, exp: 8.64e12 + 1 },
      { ...good, exp: exp + 0.5 },
      { ...good, exp: -1 },
      { ...good, exp: String(exp) },
      { ...good, t: '' },
      { ...good, t: 'PRO\u0000' },
      { ...good, t: '\ud800' },
      { ...good, t: 'x'.repeat(257) },
      { ...good, n: '' },
      { ...good, n: 'a\u0000aaaaaaaaaaaaaaa' },
      { ...good, extra: true },
      { u: USER_1, t: 'PRO', exp },
      [USER_1, 'PRO', exp, 'AAAAAAAAAAAAAAAA'],
      null,
    ];
    for (const claims of bad) {
      expect({ claims, check: tokens.authenticate(signed(claims)) }).toEqual({
        claims,
        check: { ok: false, reason: 'malformed' },
      });
    }
  });
});
