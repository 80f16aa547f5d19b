import { describe, expect, it } from '@jest/globals';
import { paddleSignature, verifyPaddleSignature } from './paddle-signature.js';

const SECRET = 'billing-webhook-secret-for-unit-tests-0000';
const body = Buffer.from('{"event_id":"evt_1","event_type":"subscription.created"}');
const now = 1_800_000_000_000;
const ts = now / 1000;
const h1 = paddleSignature(SECRET, ts, body);

describe('verifyPaddleSignature', () => {
  it('accepts the documented format', () => {
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1}`, body, SECRET, now)).toEqual({
      ok: true,
      timestamp: ts,
    });
  });

  it('accepts any of several h1 values and tolerates spaces', () => {
    const header = `ts=${ts}; h1=${'0'.repeat(64)}; h1=${h1}`;
    expect(verifyPaddleSignature(header, body, SECRET, now).ok).toBe(true);
  });

  it('refuses a missing, malformed or over-long header', () => {
    expect(verifyPaddleSignature(undefined, body, SECRET, now)).toEqual({ ok: false, reason: 'missing' });
    expect(verifyPaddleSignature(`h1=${h1}`, body, SECRET, now)).toEqual({ ok: false, reason: 'malformed' });
    expect(verifyPaddleSignature(`ts=abc;h1=${h1}`, body, SECRET, now)).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyPaddleSignature(`ts=${ts};ts=${ts};h1=${h1}`, body, SECRET, now)).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyPaddleSignature(`ts=${ts}`, body, SECRET, now)).toEqual({ ok: false, reason: 'malformed' });
    const many = Array.from({ length: 9 }, () => `h1=${h1}`).join(';');
    expect(verifyPaddleSignature(`ts=${ts};${many}`, body, SECRET, now)).toEqual({
      ok: false,
      reason: 'malformed',
    });
  });

  it('refuses a timestamp outside five minutes either way', () => {
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1}`, body, SECRET, now + 301_000).ok).toBe(false);
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1}`, body, SECRET, now - 301_000).ok).toBe(false);
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1}`, body, SECRET, now + 299_000).ok).toBe(true);
  });

  it('refuses another body, another secret, another timestamp and truncated or non-hex digests', () => {
    const other = Buffer.from(body.toString().replace('created', 'canceled'));
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1}`, other, SECRET, now)).toEqual({
      ok: false,
      reason: 'mismatch',
    });
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1}`, body, `${SECRET}x`, now).ok).toBe(false);
    expect(verifyPaddleSignature(`ts=${ts + 1};h1=${h1}`, body, SECRET, now).ok).toBe(false);
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1.slice(0, 62)}`, body, SECRET, now).ok).toBe(false);
    // Buffer.from('zz..', 'hex') would decode to nothing; such values must never compare equal.
    expect(verifyPaddleSignature(`ts=${ts};h1=${h1.slice(0, 62)}zz`, body, SECRET, now).ok).toBe(false);
  });
});
