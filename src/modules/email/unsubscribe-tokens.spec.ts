import { describe, expect, it } from '@jest/globals';
import { createHmac, randomUUID } from 'node:crypto';
import { loadConfig } from '../../config/env.js';
import { UnsubscribeTokens } from './unsubscribe-tokens.js';

const SECRET = 'unsubscribe-tokens-unit-test-secret-0000000000';
const tokens = new UnsubscribeTokens(loadConfig({ APP_ENV: 'test', EMAIL_UNSUBSCRIBE_SECRET: SECRET }));
const now = new Date('2026-12-01T10:00:00Z');
const future = now.getTime() + 86_400_000;

/** A token signed with the configured secret over any payload (what only the secret's holder can make). */
const signed = (payload: unknown) => {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
};

describe('UnsubscribeTokens', () => {
  it('round-trips the user id of either purpose', () => {
    const id = randomUUID();
    expect(tokens.verify(tokens.sign(id), 'marketing', now)).toBe(id);
    expect(tokens.verify(tokens.sign(id, 'confirm', new Date(future)), 'confirm', now)).toBe(id);
    expect(tokens.verify(signed({ u: id, p: 'marketing' }), 'marketing', now)).toBe(id);
  });

  it('treats an authentic token whose payload sign() would never write as invalid', () => {
    const id = randomUUID();
    const payloads: [unknown, 'marketing' | 'confirm'][] = [
      [{ u: 'not-a-uuid', p: 'marketing' }, 'marketing'],
      [{ u: 'a\u0000', p: 'marketing' }, 'marketing'],
      [{ u: '\ud800', p: 'marketing' }, 'marketing'],
      [{ u: 'x'.repeat(300), p: 'marketing' }, 'marketing'],
      [{ u: `${id}\u0000`, p: 'marketing' }, 'marketing'],
      [{ u: 42, p: 'marketing' }, 'marketing'],
      [{ u: 'zzz', p: 'confirm', e: future }, 'confirm'],
      [{ u: id, p: 'other' }, 'marketing'],
      [{ u: id }, 'marketing'],
      [{ u: id, p: 'marketing', x: 1 }, 'marketing'],
      [{ u: id, p: 'confirm', e: 1e20 }, 'confirm'],
      [{ u: id, p: 'confirm', e: future + 0.5 }, 'confirm'],
      [{ u: id, p: 'confirm', e: String(future) }, 'confirm'],
      [{ u: id, p: 'confirm', e: null }, 'confirm'],
      [{ u: id, p: 'marketing', e: -1 }, 'marketing'],
      // The issue time: on a confirmation link only, with its expiry, an integer not after it.
      [{ u: id, p: 'marketing', i: now.getTime() }, 'marketing'],
      [{ u: id, p: 'confirm', i: now.getTime() }, 'confirm'],
      [{ u: id, p: 'confirm', e: future, i: future + 1 }, 'confirm'],
      [{ u: id, p: 'confirm', e: future, i: 0 }, 'confirm'],
      [{ u: id, p: 'confirm', e: future, i: now.getTime() + 0.5 }, 'confirm'],
      [{ u: id, p: 'confirm', e: future, i: String(now.getTime()) }, 'confirm'],
      [{ u: id, p: 'confirm', e: future, i: null }, 'confirm'],
      [[id, 'marketing'], 'marketing'],
      [null, 'marketing'],
      ['marketing', 'marketing'],
    ];
    for (const [payload, purpose] of payloads) {
      expect({ payload, verified: tokens.verify(signed(payload), purpose, now) }).toEqual({
        payload,
        verified: null,
      });
    }
  });

  it('gives a confirmation link its issue time: its expiry less the 7 days, in the payload the last release reads', () => {
    const id = randomUUID();
    const asked = new Date(now.getTime() - 3_600_000);
    const url = new URL(tokens.confirmUrl(id, now, asked));
    const token = url.searchParams.get('t')!;
    expect(tokens.confirmation(token, now)).toEqual({ userId: id, issuedAt: asked });
    expect(tokens.verify(token, 'confirm', now)).toBe(id);
    // Only {u, p, e}: the previous release refuses any other member (a rolling deploy, a rollback).
    expect(Object.keys(JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()))).toEqual([
      'u',
      'p',
      'e',
    ]);
    // The request's clock may be ahead of the signer's: kept, within a day.
    const ahead = new URL(tokens.confirmUrl(id, now, new Date(now.getTime() + 50))).searchParams.get('t')!;
    expect(tokens.confirmation(ahead, now)?.issuedAt).toEqual(new Date(now.getTime() + 50));
    const beyond = new URL(tokens.confirmUrl(id, now, new Date(1e15))).searchParams.get('t')!;
    expect(tokens.confirmation(beyond, now)?.issuedAt).toEqual(new Date(now.getTime() + 86_400_000));
    // A job sent days late: issued at most 6 days before its sending, so the link is valid a day at least.
    const late = new URL(
      tokens.confirmUrl(id, now, new Date(now.getTime() - 30 * 86_400_000)),
    ).searchParams.get('t')!;
    expect(tokens.confirmation(late, now)?.issuedAt).toEqual(new Date(now.getTime() - 6 * 86_400_000));
    // A link from before the rule: `{u, p, e}`, valid 7 days from its sending.
    const legacy = signed({ u: id, p: 'confirm', e: now.getTime() + 7 * 86_400_000 });
    expect(tokens.confirmation(legacy, now)).toEqual({ userId: id, issuedAt: now });
    expect(tokens.confirmation(legacy, new Date(now.getTime() + 7 * 86_400_000))).toBeNull();
    expect(tokens.confirmation(tokens.sign(id), now)).toBeNull();
  });
});
