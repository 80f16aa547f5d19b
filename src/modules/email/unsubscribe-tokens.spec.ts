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
});
