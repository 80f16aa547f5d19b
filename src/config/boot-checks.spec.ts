import { describe, expect, it } from '@jest/globals';
import {
  type BootProbes,
  corsOriginProblem,
  billingCycleWarning,
  describeError,
  developmentKeyWarning,
  formatRefusal,
  hmacKeyBytes,
  runBootChecks,
} from './boot-checks.js';
import {
  DEV_BILLING_WEBHOOK_SECRET,
  DEV_IDENTITY_WEBHOOK_SECRET,
  DEV_UNSUBSCRIBE_SECRET,
  loadConfig,
} from './env.js';

const GOOD = {
  APP_ENV: 'production',
  COMPANY_LEGAL_NAME: 'Acme Software GmbH',
  EMAIL_UNSUBSCRIBE_SECRET: 'u'.repeat(32),
  BILLING_WEBHOOK_SECRET: 'b'.repeat(32),
  IDENTITY_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
  CORS_ORIGINS: 'https://app.example.com',
  PUBLIC_BASE_URL: 'https://api.example.com',
  DATABASE_URL: 'postgresql://app:pw@db.example.com:5432/app?sslmode=verify-full',
  EMAIL_PROVIDER: 'resend',
  EMAIL_API_KEY: 're_live_key_0123456789',
  BILLING_API_URL: 'https://api.paddle.com',
  IDENTITY_JWKS_URL: 'https://identity.example.com/.well-known/jwks.json',
  IDENTITY_ISSUER: 'https://identity.example.com',
  IDENTITY_AUDIENCE: 'https://api.example.com',
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

describe('release 0.2 boot refusals (issue 14), after the spec ones', () => {
  const whsec = (key: string) => `whsec_${Buffer.from(key).toString('base64')}`;

  it.each<[string, Record<string, string>, string, RegExp]>([
    [
      'a development-default previous identity secret',
      { IDENTITY_WEBHOOK_SECRET_PREVIOUS: DEV_IDENTITY_WEBHOOK_SECRET },
      'previous_secrets',
      /^IDENTITY_WEBHOOK_SECRET_PREVIOUS is the public development default$/,
    ],
    [
      'a development-default previous billing secret',
      { BILLING_WEBHOOK_SECRET_PREVIOUS: DEV_BILLING_WEBHOOK_SECRET },
      'previous_secrets',
      /BILLING_WEBHOOK_SECRET_PREVIOUS is the public/,
    ],
    [
      'a development-default previous unsubscribe secret',
      { EMAIL_UNSUBSCRIBE_SECRET_PREVIOUS: DEV_UNSUBSCRIBE_SECRET },
      'previous_secrets',
      /EMAIL_UNSUBSCRIBE_SECRET_PREVIOUS is the public/,
    ],
    [
      'a DATABASE_URL without sslmode',
      { DATABASE_URL: 'postgresql://app:pw@db.example.com/app' },
      'database_tls',
      /DATABASE_URL must use TLS.*no sslmode/,
    ],
    [
      'sslmode=prefer',
      { DATABASE_URL: 'postgresql://db.example.com/app?sslmode=prefer' },
      'database_tls',
      /sslmode=prefer/,
    ],
    [
      'sslmode=disable',
      { DATABASE_URL: 'postgresql://db.example.com/app?sslmode=disable' },
      'database_tls',
      /sslmode=disable/,
    ],
    [
      'the console e-mail provider',
      { EMAIL_PROVIDER: 'console' },
      'email_provider',
      /EMAIL_PROVIDER is console/,
    ],
    ['an unset e-mail provider', { EMAIL_PROVIDER: '' }, 'email_provider', /unset means console/],
    ['an unset BILLING_API_URL', { BILLING_API_URL: '' }, 'billing_api_url', /BILLING_API_URL is unset/],
    [
      'an unset IDENTITY_JWKS_URL',
      { IDENTITY_JWKS_URL: '', IDENTITY_ISSUER: '' },
      'identity_provider',
      /IDENTITY_JWKS_URL is unset/,
    ],
    [
      'an unset IDENTITY_ISSUER',
      { IDENTITY_ISSUER: '', IDENTITY_JWKS_URL: '' },
      'identity_provider',
      /IDENTITY_JWKS_URL/,
    ],
    [
      'neither audience nor authorized parties',
      { IDENTITY_AUDIENCE: '' },
      'identity_audience',
      /IDENTITY_ALLOW_ANY_AUDIENCE=true/,
    ],
    [
      'IDENTITY_ALLOW_ANY_AUDIENCE=false',
      { IDENTITY_AUDIENCE: '', IDENTITY_ALLOW_ANY_AUDIENCE: 'false' },
      'identity_audience',
      /IDENTITY_AUDIENCE/,
    ],
    [
      'a CORS null origin',
      { CORS_ORIGINS: 'https://app.example.com,null' },
      'cors_origin_format',
      /"null" is not an origin/,
    ],
    ['a CORS wildcard', { CORS_ORIGINS: '*' }, 'cors_origin_format', /"\*"/],
    [
      'a reused secret',
      { EMAIL_UNSUBSCRIBE_SECRET: 'b'.repeat(32) },
      'secret_reuse',
      /^EMAIL_UNSUBSCRIBE_SECRET has the same value as BILLING_WEBHOOK_SECRET/,
    ],
  ])('refuses %s', async (_name, override, name, reason) => {
    const refusal = await check({ ...GOOD, ...override });
    expect(refusal?.check).toBe(name);
    expect(refusal?.reason).toMatch(reason);
    // A configuration the spec's checks refuse keeps that refusal.
    expect((await check({ ...GOOD, ...override, COMPANY_LEGAL_NAME: 'TBD' }))?.check).toBe('project_config');
    expect((await check({ ...GOOD, ...override, PUBLIC_BASE_URL: '' }))?.check).toBe('public_base_url');
    // Not outside deployments.
    expect(await check({ ...GOOD, ...override, APP_ENV: 'development' })).toBeNull();
  });

  it('checks in the issue order', async () => {
    const all = {
      BILLING_WEBHOOK_SECRET_PREVIOUS: DEV_BILLING_WEBHOOK_SECRET,
      DATABASE_URL: 'postgresql://db.example.com/app',
      EMAIL_PROVIDER: 'console',
      BILLING_API_URL: '',
      IDENTITY_JWKS_URL: '',
      IDENTITY_ISSUER: '',
      IDENTITY_AUDIENCE: '',
      CORS_ORIGINS: 'null',
      EMAIL_UNSUBSCRIBE_SECRET: 'b'.repeat(32),
    };
    const order: string[] = [];
    let env: Record<string, string> = { ...GOOD, ...all };
    const fixes: Record<string, string>[] = [
      { BILLING_WEBHOOK_SECRET_PREVIOUS: '' },
      { DATABASE_URL: GOOD.DATABASE_URL },
      { EMAIL_PROVIDER: 'resend' },
      { BILLING_API_URL: GOOD.BILLING_API_URL },
      { IDENTITY_JWKS_URL: GOOD.IDENTITY_JWKS_URL, IDENTITY_ISSUER: GOOD.IDENTITY_ISSUER },
      { IDENTITY_AUDIENCE: GOOD.IDENTITY_AUDIENCE },
      { CORS_ORIGINS: GOOD.CORS_ORIGINS },
      { EMAIL_UNSUBSCRIBE_SECRET: GOOD.EMAIL_UNSUBSCRIBE_SECRET },
    ];
    for (const fix of fixes) {
      order.push((await check(env))?.check ?? 'none');
      env = { ...env, ...fix };
    }
    order.push((await check(env))?.check ?? 'none');
    expect(order).toEqual([
      'previous_secrets',
      'database_tls',
      'email_provider',
      'billing_api_url',
      'identity_provider',
      'identity_audience',
      'cors_origin_format',
      'secret_reuse',
      'none',
    ]);
  });

  it.each([
    'sslmode=require',
    'sslmode=verify-ca',
    'sslmode=verify-full',
    'uselibpqcompat=true&sslmode=require',
  ])('accepts a DATABASE_URL with %s', async (query) => {
    expect(await check({ ...GOOD, DATABASE_URL: `postgresql://db.example.com/app?${query}` })).toBeNull();
  });

  it('accepts authorized parties alone, or an explicit any-audience', async () => {
    expect(
      await check({ ...GOOD, IDENTITY_AUDIENCE: '', IDENTITY_AUTHORIZED_PARTIES: 'https://app.example.com' }),
    ).toBeNull();
    expect(await check({ ...GOOD, IDENTITY_AUDIENCE: '', IDENTITY_ALLOW_ANY_AUDIENCE: 'true' })).toBeNull();
  });

  it.each([
    'null',
    '*',
    'https://*.example.com',
    'http://app.example.com',
    'https://app.example.com/',
    'https://app.example.com/app',
    'https://app.example.com?x=1',
    'https://user@app.example.com',
    'https://APP.example.com',
    'https://app.example.com:443',
    'app.example.com',
    'https://127.0.0.2',
    'https://127.1.2.3:8443',
    'https://0.0.0.0',
    'https://[::1]',
    'https://[::]',
    'https://[::ffff:127.0.0.1]',
    'https://[::ffff:7f00:2]',
    'https://localhost',
    'https://localhost.',
    'https://app.localhost:5173',
  ])('refuses the CORS entry %s', (entry) => {
    expect(corsOriginProblem(entry)).not.toBeNull();
  });

  it.each([
    'https://app.example.com',
    'https://app.example.com:8443',
    'https://203.0.113.7',
    'https://[2001:db8::1]',
  ])('accepts the CORS origin %s', (entry) => {
    expect(corsOriginProblem(entry)).toBeNull();
  });

  it.each<[string, Record<string, string>]>([
    ['identity (whsec_ decoded) and billing', { IDENTITY_WEBHOOK_SECRET: whsec('b'.repeat(32)) }],
    ['a previous secret and another current one', { EMAIL_UNSUBSCRIBE_SECRET_PREVIOUS: 'b'.repeat(32) }],
    ['a webhook secret and an API key', { BILLING_API_KEY: 'b'.repeat(32) }],
    ['two API keys', { BILLING_API_KEY: 'same-key-0123456789', LLM_API_KEY: 'same-key-0123456789' }],
  ])('refuses one value used for %s, naming the variables only', async (_name, override) => {
    const refusal = await check({ ...GOOD, ...override });
    expect(refusal?.check).toBe('secret_reuse');
    expect(refusal?.reason).not.toMatch(/bbbb|same-key/);
  });

  it('lets a secret and its own previous value be equal', async () => {
    expect(await check({ ...GOOD, BILLING_WEBHOOK_SECRET_PREVIOUS: GOOD.BILLING_WEBHOOK_SECRET })).toBeNull();
  });
});

describe('developmentKeyWarning', () => {
  const development = (env: Record<string, string>) => loadConfig({ APP_ENV: 'development', ...env });

  it('names a key set below its floor in development, where the boot refusals do not apply', () => {
    expect(developmentKeyWarning(development({ EMAIL_UNSUBSCRIBE_SECRET: 'short' }))).toBe(
      'boot warning [secrets]: EMAIL_UNSUBSCRIBE_SECRET is unset or shorter than 32 characters; a deployed process refuses to start with it',
    );
    expect(developmentKeyWarning(development({ BILLING_WEBHOOK_SECRET: 'short' }))).toMatch(
      /^boot warning \[secrets\]: BILLING_WEBHOOK_SECRET is unset or shorter than 32 bytes/,
    );
  });

  it('says nothing for the development defaults, for long keys, in tests and when deployed (refused there)', () => {
    expect(developmentKeyWarning(development({}))).toBeNull();
    expect(developmentKeyWarning(development({ BILLING_WEBHOOK_SECRET: 'b'.repeat(32) }))).toBeNull();
    expect(
      developmentKeyWarning(loadConfig({ APP_ENV: 'test', BILLING_WEBHOOK_SECRET: 'short' })),
    ).toBeNull();
    expect(developmentKeyWarning(loadConfig({ ...GOOD, BILLING_WEBHOOK_SECRET: 'short' }))).toBeNull();
  });
});

describe('billingCycleWarning', () => {
  it('names the tiers with several prices when no price names its billing cycle', () => {
    expect(
      billingCycleWarning(loadConfig({ BILLING_PRICE_TIERS: 'pri_pro:PRO,pri_pro_2025:PRO,pri_team:TEAM' })),
    ).toBe(
      'boot warning [billing_cycles]: PRO (2 prices) and BILLING_PRICE_TIERS names no billing cycle: a change to such a tier answers 409 no_price_for_cycle until every price says :month or :year',
    );
  });

  it('says nothing with one price per tier, or once the cycles are named', () => {
    expect(billingCycleWarning(loadConfig({ BILLING_PRICE_TIERS: 'pri_pro:PRO,pri_team:TEAM' }))).toBeNull();
    expect(
      billingCycleWarning(
        loadConfig({ BILLING_PRICE_TIERS: 'pri_pro:PRO:month,pri_pro_y:PRO:year,pri_team:TEAM:month' }),
      ),
    ).toBeNull();
  });
});
