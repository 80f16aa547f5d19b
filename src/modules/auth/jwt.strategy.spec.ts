import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { UnauthenticatedError } from '../../common/errors/app-error.js';
import type { IdentityKeySet } from './identity-key-set.js';
import { keyProvider, StrategyFailure } from './jwt.strategy.js';

const b64url = (text: string) => Buffer.from(text).toString('base64url');
const token = (payload: string) =>
  `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: 'k1' }))}.${b64url(payload)}.c2ln`;
const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const keys = { key: async () => publicKey } as unknown as IdentityKeySet;

/** Calls the provider and collects every call of its callback, failing the test on an unhandled rejection. */
async function provide(jws: string, done: (err: unknown, key?: unknown) => void): Promise<void> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    keyProvider(keys)({} as never, jws, done as never);
    await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  expect(unhandled).toEqual([]);
}

describe('keyProvider', () => {
  it.each(['null', '5', '"x"', 'true', '[]', 'not json'])(
    'refuses a payload of %s before looking up a key',
    async (payload) => {
      const calls: unknown[][] = [];
      await provide(token(payload), (...args) => calls.push(args));
      expect(calls).toEqual([[expect.any(UnauthenticatedError)]]);
      expect((calls[0][0] as UnauthenticatedError).code).toBe('invalid_token');
    },
  );

  it('hands over the key of a token whose payload is an object', async () => {
    const calls: unknown[][] = [];
    await provide(token('{"sub":"u"}'), (...args) => calls.push(args));
    expect(calls).toEqual([[null, publicKey]]);
  });

  // What verifying runs inside the callback (jsonwebtoken, passport) must never escape as an unhandled
  // rejection of the key lookup's promise: that exits the process and leaves the request unanswered.
  it('fails the request, not the process, when verifying throws inside the callback', async () => {
    const calls: unknown[][] = [];
    const thrown = new TypeError('Cannot read properties of null');
    await provide(token('{"sub":"u"}'), (...args) => {
      calls.push(args);
      if (calls.length === 1) throw thrown;
    });
    expect(calls).toHaveLength(2);
    expect(calls[1][0]).toBeInstanceOf(StrategyFailure);
    expect((calls[1][0] as StrategyFailure).original).toBe(thrown);
  });
});
