import { describe, expect, it } from '@jest/globals';
import {
  assertSameRequest,
  IdempotencyKeyMismatchError,
  parseIdempotencyKey,
  requestHash,
} from './idempotency-key.js';

describe('Idempotency-Key', () => {
  it('takes a bare token or its structured-header form as the same key, and no header as none', () => {
    expect(parseIdempotencyKey('abc-123')).toBe('abc-123');
    expect(parseIdempotencyKey('"abc-123"')).toBe('abc-123');
    expect(parseIdempotencyKey(' a.b_c~d:e ')).toBe('a.b_c~d:e');
    expect(parseIdempotencyKey('x'.repeat(128))).toBe('x'.repeat(128));
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
  });

  it('refuses keys outside 1..128 safe characters with 400 invalid_idempotency_key', () => {
    for (const key of ['', ' ', '""', 'a b', 'x'.repeat(129), 'é', 'a/b', 'a;b', 'a, b']) {
      expect(() => parseIdempotencyKey(key)).toThrow(
        expect.objectContaining({ status: 400, code: 'invalid_idempotency_key' }),
      );
    }
  });

  it('fingerprints the request deterministically', () => {
    expect(requestHash({ a: 1 })).toBe(requestHash({ a: 1 }));
    expect(requestHash({ a: 1 })).not.toBe(requestHash({ a: 2 }));
  });

  it('refuses a key whose first request had another fingerprint with 422 idempotency_key_mismatch', () => {
    const hash = requestHash({ a: 1 });
    expect(() => assertSameRequest(hash, hash)).not.toThrow();
    for (const stored of [requestHash({ a: 2 }), null, undefined]) {
      expect(() => assertSameRequest(stored, hash)).toThrow(IdempotencyKeyMismatchError);
    }
    expect(new IdempotencyKeyMismatchError()).toMatchObject({
      status: 422,
      code: 'idempotency_key_mismatch',
    });
  });
});
