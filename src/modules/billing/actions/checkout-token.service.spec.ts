import { describe, expect, it } from '@jest/globals';
import { loadConfig } from '../../../config/env.js';
import { CheckoutTokenService } from './checkout-token.service.js';

const config = loadConfig({
  APP_ENV: 'test',
  BILLING_WEBHOOK_SECRET: 'checkout-token-unit-test-secret-000000000',
});
const tokens = new CheckoutTokenService(config);
const now = new Date('2026-11-22T10:00:00Z');

describe('CheckoutTokenService', () => {
  it('round-trips user, tier, expiry and a fresh nonce', () => {
    const a = tokens.issue('user-1', 'PRO', now);
    const b = tokens.issue('user-1', 'PRO', now);
    expect(a.token).not.toBe(b.token);
    expect(a.expiresAt.toISOString()).toBe('2026-11-22T11:00:00.000Z');
    const check = tokens.verify(a.token, now);
    expect(check).toMatchObject({
      ok: true,
      claims: { userId: 'user-1', tier: 'PRO', expiresAt: a.expiresAt },
    });
    if (check.ok) expect(check.claims.nonce.length).toBeGreaterThanOrEqual(16);
  });

  it('expires at exp, judged at the given instant', () => {
    const { token, expiresAt } = tokens.issue('user-1', 'PRO', now);
    expect(tokens.verify(token, new Date(expiresAt.getTime() - 1)).ok).toBe(true);
    expect(tokens.verify(token, expiresAt)).toEqual({ ok: false, reason: 'expired' });
  });

  it('authenticates an expired token (ownership needs only the signature) but nothing forged', () => {
    const { token, expiresAt } = tokens.issue('user-1', 'PRO', now);
    expect(tokens.authenticate(token)).toMatchObject({ ok: true, claims: { userId: 'user-1', expiresAt } });
    expect(tokens.verify(token, new Date(expiresAt.getTime() + 86_400_000))).toEqual({
      ok: false,
      reason: 'expired',
    });
    const [body, sig] = token.split('.');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, u: 'user-2' })).toString('base64url');
    expect(tokens.authenticate(`${forgedBody}.${sig}`)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(tokens.authenticate(`${body}.${'A'.repeat(43)}`)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(tokens.authenticate('a.b.c')).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses tampered claims, foreign keys and garbage', () => {
    const { token } = tokens.issue('user-1', 'PRO', now);
    const [body, sig] = token.split('.');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, u: 'user-2' })).toString('base64url');
    expect(tokens.verify(`${forgedBody}.${sig}`, now)).toEqual({ ok: false, reason: 'bad_signature' });
    const other = new CheckoutTokenService(
      loadConfig({ APP_ENV: 'test', BILLING_WEBHOOK_SECRET: 'another-secret-of-enough-length-00000000' }),
    );
    expect(other.verify(token, now)).toEqual({ ok: false, reason: 'bad_signature' });
    for (const garbage of ['', 'abc', 'a.b.c', `${body}.`, `.${sig}`, 'x'.repeat(2000)]) {
      expect(tokens.verify(garbage, now).ok).toBe(false);
    }
  });
});
