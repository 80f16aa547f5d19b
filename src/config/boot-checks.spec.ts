import { describe, expect, it } from '@jest/globals';
import { type BootProbes, describeError, formatRefusal, hmacKeyBytes, runBootChecks } from './boot-checks.js';
import { loadConfig } from './env.js';

const GOOD = {
  APP_ENV: 'production',
  COMPANY_LEGAL_NAME: 'Acme Software GmbH',
  EMAIL_UNSUBSCRIBE_SECRET: 'u'.repeat(32),
  BILLING_WEBHOOK_SECRET: 'b'.repeat(32),
  IDENTITY_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
  CORS_ORIGINS: 'https://app.example.com',
  PUBLIC_BASE_URL: 'https://api.example.com',
};

const ok: BootProbes = { database: async () => undefined, redis: async () => undefined };
const calls: string[] = [];
const tracking: BootProbes = {
  database: async () => void calls.push('database'),
  redis: async () => void calls.push('redis'),
};
const down = (message: string) => async () => {
  throw new Error(message);
};

const check = (env: Record<string, string>, probes: BootProbes = ok) =>
  runBootChecks(loadConfig(env), probes);

describe('boot refusals', () => {
  it('passes a correct deployed configuration', async () => {
    expect(await check(GOOD)).toBeNull();
  });

  it('does not apply in development and test', async () => {
    const broken = { COMPANY_LEGAL_NAME: 'TBD', CORS_ORIGINS: 'http://localhost:3000', TESTING: '1' };
    const failing = { database: down('x'), redis: down('y') };
    expect(await check({ ...broken, APP_ENV: 'development' }, failing)).toBeNull();
    expect(await check({ ...broken, APP_ENV: 'test' }, failing)).toBeNull();
  });

  it('refuses the TBD legal name first', async () => {
    const refusal = await check({ ...GOOD, COMPANY_LEGAL_NAME: 'TBD', CORS_ORIGINS: 'http://localhost' });
    expect(refusal).toEqual({ check: 'project_config', reason: expect.stringContaining('TBD') });
    // Unset means the project config's sentinel.
    const { COMPANY_LEGAL_NAME: _omit, ...unset } = GOOD;
    expect((await check(unset))?.check).toBe('project_config');
  });

  it.each([
    ['EMAIL_UNSUBSCRIBE_SECRET unset', { EMAIL_UNSUBSCRIBE_SECRET: '' }, /EMAIL_UNSUBSCRIBE_SECRET/],
    [
      'EMAIL_UNSUBSCRIBE_SECRET of 31 characters',
      { EMAIL_UNSUBSCRIBE_SECRET: 'u'.repeat(31) },
      /EMAIL_UNSUBSCRIBE_SECRET/,
    ],
    ['a short billing key', { BILLING_WEBHOOK_SECRET: 'b'.repeat(31) }, /BILLING_WEBHOOK_SECRET/],
    [
      'a 16-byte identity key',
      { IDENTITY_WEBHOOK_SECRET: `whsec_${Buffer.alloc(16, 1).toString('base64')}` },
      /IDENTITY_WEBHOOK_SECRET is unset or shorter than 24 bytes/,
    ],
    [
      'a 23-byte identity key',
      { IDENTITY_WEBHOOK_SECRET: `whsec_${Buffer.alloc(23, 1).toString('base64')}` },
      /IDENTITY_WEBHOOK_SECRET/,
    ],
    [
      'a 23-byte previous identity key',
      { IDENTITY_WEBHOOK_SECRET_PREVIOUS: `whsec_${Buffer.alloc(23, 1).toString('base64')}` },
      /IDENTITY_WEBHOOK_SECRET_PREVIOUS is shorter than 24 bytes/,
    ],
    ['TESTING=1 when deployed', { TESTING: '1' }, /TESTING/],
  ])('refuses secrets: %s', async (_name, override, reason) => {
    const refusal = await check({ ...GOOD, ...override, CORS_ORIGINS: 'http://127.0.0.1:3000' });
    expect(refusal?.check).toBe('secrets');
    expect(refusal?.reason).toMatch(reason);
  });

  it('accepts the 24-byte whsec_ secrets Svix generates for Standard Webhooks senders', async () => {
    const svix = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    expect(await check({ ...GOOD, IDENTITY_WEBHOOK_SECRET: svix })).toBeNull();
    expect(await check({ ...GOOD, IDENTITY_WEBHOOK_SECRET_PREVIOUS: svix })).toBeNull();
  });

  it('keeps 32 bytes for the secrets we choose ourselves', async () => {
    const refusal = await check({ ...GOOD, BILLING_WEBHOOK_SECRET: 'b'.repeat(24) });
    expect(refusal?.reason).toMatch(/BILLING_WEBHOOK_SECRET is unset or shorter than 32 bytes/);
  });

  it('refuses a short rotation-overlap key', async () => {
    expect((await check({ ...GOOD, BILLING_WEBHOOK_SECRET_PREVIOUS: 'x'.repeat(31) }))?.reason).toMatch(
      /BILLING_WEBHOOK_SECRET_PREVIOUS/,
    );
    expect(await check({ ...GOOD, BILLING_WEBHOOK_SECRET_PREVIOUS: 'x'.repeat(32) })).toBeNull();
  });

  it('applies the secrets rule to staging too', async () => {
    expect((await check({ ...GOOD, APP_ENV: 'staging', TESTING: '1' }))?.check).toBe('secrets');
  });

  it.each(['http://localhost:3000', 'https://app.example.com,http://127.0.0.1:8080', 'http://api.localhost'])(
    'refuses local CORS origins (%s) before probing stores',
    async (origins) => {
      calls.length = 0;
      const refusal = await check({ ...GOOD, CORS_ORIGINS: origins }, tracking);
      expect(refusal?.check).toBe('cors_origins');
      expect(calls).toEqual([]);
    },
  );

  it('refuses an unreachable database before probing redis', async () => {
    calls.length = 0;
    const refusal = await check(GOOD, {
      database: down('connect ECONNREFUSED 127.0.0.1:5432'),
      redis: tracking.redis,
    });
    expect(refusal).toEqual({
      check: 'database',
      reason: 'unreachable: connect ECONNREFUSED 127.0.0.1:5432',
    });
    expect(calls).toEqual([]);
  });

  it('refuses an unreachable redis last', async () => {
    const refusal = await check(GOOD, {
      database: ok.database,
      redis: down('connect ECONNREFUSED 127.0.0.1:6379'),
    });
    expect(refusal?.check).toBe('redis');
  });

  it.each([
    ['unset', ''],
    ['plain http', 'http://api.example.com'],
    ['https on localhost', 'https://localhost:3000'],
    ['https on 127.0.0.1', 'https://127.0.0.1'],
  ])('refuses a deployed PUBLIC_BASE_URL that is %s, after the spec refusals', async (_name, value) => {
    const refusal = await check({ ...GOOD, PUBLIC_BASE_URL: value });
    expect(refusal?.check).toBe('public_base_url');
    expect(refusal?.reason).toMatch(/PUBLIC_BASE_URL must be the public https:\/\/ URL/);
    expect(await check({ ...GOOD, APP_ENV: 'staging', PUBLIC_BASE_URL: value })).toMatchObject({
      check: 'public_base_url',
    });
    // The spec's five keep their outcome when the public URL is wrong as well.
    expect((await check({ ...GOOD, PUBLIC_BASE_URL: value, COMPANY_LEGAL_NAME: 'TBD' }))?.check).toBe(
      'project_config',
    );
    expect(
      (await check({ ...GOOD, PUBLIC_BASE_URL: value }, { database: ok.database, redis: down('refused') }))
        ?.check,
    ).toBe('redis');
  });

  it('accepts an https PUBLIC_BASE_URL with a path, and any URL outside deployments', async () => {
    expect(await check({ ...GOOD, PUBLIC_BASE_URL: 'https://example.com/service/' })).toBeNull();
    expect(await check({ ...GOOD, APP_ENV: 'development', PUBLIC_BASE_URL: '' })).toBeNull();
  });

  it('formats one line naming the check', () => {
    const line = formatRefusal({ check: 'cors_origins', reason: 'CORS_ORIGINS contains http://localhost' });
    expect(line).toBe('boot refused [cors_origins]: CORS_ORIGINS contains http://localhost');
    expect(line).not.toContain('\n');
  });

  it('names the cause when the probe error has an empty message (AggregateError of IPv6 and IPv4)', async () => {
    // What Node 20 rejects with when `localhost` refuses on both ::1 and 127.0.0.1.
    const both = Object.assign(
      new AggregateError(
        [
          Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' }),
          Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
        ],
        '',
      ),
      { code: 'ECONNREFUSED' },
    );
    const refusal = await check(GOOD, { database: async () => Promise.reject(both), redis: ok.redis });
    expect(refusal).toEqual({
      check: 'database',
      reason: 'unreachable: connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432',
    });
  });

  it.each([
    ['an empty message with a code', Object.assign(new Error(''), { code: 'ETIMEDOUT' }), 'ETIMEDOUT'],
    [
      'an AggregateError whose inner errors are empty too',
      Object.assign(new AggregateError([new Error('')], ''), { code: 'ECONNREFUSED' }),
      'ECONNREFUSED',
    ],
    [
      'a message spanning lines',
      new Error('connection failed:\n  server closed\r\n\tunexpectedly '),
      'connection failed: server closed unexpectedly',
    ],
    ['no message, no code', new Error(''), 'unknown error'],
    ['a non-error value', '  ', 'unknown error'],
  ])('describes %s in one non-empty line', (_name, error, text) => {
    expect(describeError(error)).toBe(text);
  });

  it('prints one line even when a reason spans lines', () => {
    expect(formatRefusal({ check: 'redis', reason: 'unreachable: a\nb\n' })).toBe(
      'boot refused [redis]: unreachable: a b',
    );
  });

  it('measures Standard Webhooks keys by their decoded bytes', () => {
    expect(hmacKeyBytes(`whsec_${Buffer.alloc(32).toString('base64')}`)).toBe(32);
    expect(hmacKeyBytes('x'.repeat(40))).toBe(40);
  });
});
