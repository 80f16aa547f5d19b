import { describe, expect, it } from '@jest/globals';
import { ConfigError, DEFAULT_DISPOSABLE_DOMAINS_URL, loadConfig, MAX_HTTP_TIMEOUT_MS } from './env.js';
import { MAX_HTTP_ATTEMPTS, RETRY_AFTER_CAP_MS } from '../infra/http/retry-policy.js';
import { ORPHAN_AFTER_MS } from '../modules/credits/orphan-window.js';

describe('loadConfig', () => {
  it('applies local defaults in development', () => {
    const config = loadConfig({});
    expect(config.env).toBe('development');
    expect(config.deployed).toBe(false);
    expect(config.port).toBe(3000);
    expect(config.workerPort).toBe(3001);
    expect(config.redis.url).toBe('redis://127.0.0.1:6379');
    expect(config.corsOrigins).toEqual([]);
    expect(config.email.provider).toBe('console');
    expect(config.email.maxRequestsPerSecond).toBe(8.3);
    expect(config.http).toEqual({ timeoutMs: 30000, maxAttempts: 3 });
    expect(config.email.sendRetries).toBe(3);
    expect(config.retention.webhookArchiveDays).toBe(90);
    expect(config.project.leadMagnetPrefixes).toEqual({});
    expect(config.testing).toBe(false);
    expect(config.shutdownTimeoutMs).toBe(25000);
  });

  it('reads credit packs, per-tier rollover and the low-balance percent (issue 18)', () => {
    const config = loadConfig({
      BILLING_CREDIT_PACKS: 'pri_pack_s:500,pri_pack_l:3000',
      CREDIT_ROLLOVER: 'PRO:none,TEAM:cap:2000',
      LOW_BALANCE_PERCENT: '15',
    });
    expect(config.project.creditPacks).toEqual({ pri_pack_s: 500, pri_pack_l: 3000 });
    expect(Object.fromEntries(Object.entries(config.project.tiers).map(([t, c]) => [t, c.rollover]))).toEqual(
      {
        FREE: 'full',
        PRO: 'none',
        TEAM: 'cap:2000',
      },
    );
    expect(config.credits.lowBalancePercent).toBe(15);
    expect(loadConfig({}).credits.lowBalancePercent).toBe(10);
    expect(loadConfig({}).project.creditPacks).toEqual({});
    for (const [env, message] of [
      [{ BILLING_CREDIT_PACKS: 'pri_pack_s:0' }, /BILLING_CREDIT_PACKS/],
      [{ BILLING_CREDIT_PACKS: 'pri_pro:500' }, /already the price of tier PRO/],
      [{ CREDIT_ROLLOVER: 'PRO:some' }, /CREDIT_ROLLOVER: PRO/],
      [{ CREDIT_ROLLOVER: 'GOLD:none' }, /unknown tier GOLD/],
      [{ CREDIT_ROLLOVER: 'PRO:none,PRO:full' }, /CREDIT_ROLLOVER: PRO is given twice/],
      [{ BILLING_PRICE_TIERS: 'pri_pro:PRO,pri_pro:TEAM' }, /BILLING_PRICE_TIERS: pri_pro is given twice/],
      [{ BILLING_CREDIT_PACKS: 'pri_s:500,pri_s:600' }, /BILLING_CREDIT_PACKS: pri_s is given twice/],
      [{ LOW_BALANCE_PERCENT: '101' }, /LOW_BALANCE_PERCENT/],
    ] as const) {
      expect(() => loadConfig(env)).toThrow(message);
    }
  });

  it('reads the shutdown deadline', () => {
    expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: '55000' }).shutdownTimeoutMs).toBe(55000);
  });

  it('reads the keep-alive timeout (above the load balancer idle timeout: Google Cloud needs 620 s)', () => {
    expect(loadConfig({}).keepAliveTimeoutMs).toBe(65000);
    expect(loadConfig({ KEEP_ALIVE_TIMEOUT_MS: '620000' }).keepAliveTimeoutMs).toBe(620000);
    for (const value of ['0', '999', '3600001', 'x'])
      expect(() => loadConfig({ KEEP_ALIVE_TIMEOUT_MS: value })).toThrow(/KEEP_ALIVE_TIMEOUT_MS/);
  });

  it('lets the environment override the project config', () => {
    const config = loadConfig({
      APP_ENV: 'staging',
      ADMIN_EMAILS: 'A@Example.com, b@example.com',
      COMPANY_LEGAL_NAME: 'Acme GmbH',
      BILLING_PRICE_TIERS: 'pri_a:PRO,pri_b:TEAM',
      LEAD_MAGNET_PREFIXES: 'lead_magnet:lm_',
      CORS_ORIGINS: 'https://a.example.com,https://b.example.com',
      TESTING: '1',
    });
    expect(config.deployed).toBe(true);
    expect(config.project.adminEmails).toEqual(['a@example.com', 'b@example.com']);
    expect(config.project.companyLegalName).toBe('Acme GmbH');
    expect(config.project.priceTiers).toEqual({ pri_a: 'PRO', pri_b: 'TEAM' });
    expect(config.project.leadMagnetPrefixes).toEqual({ lead_magnet: 'lm_' });
    expect(config.corsOrigins).toEqual(['https://a.example.com', 'https://b.example.com']);
    expect(config.testing).toBe(true);
  });

  it('reads an optional billing cycle per price in BILLING_PRICE_TIERS (annual plans)', () => {
    const config = loadConfig({
      BILLING_PRICE_TIERS: 'pri_pro:PRO:month, pri_team:TEAM:month,pri_pro_y:PRO:year,pri_team_y:TEAM:year',
    });
    expect(config.project.priceTiers).toEqual({
      pri_pro: 'PRO',
      pri_team: 'TEAM',
      pri_pro_y: 'PRO',
      pri_team_y: 'TEAM',
    });
    expect(config.project.priceCycles).toEqual({
      pri_pro: 'month',
      pri_team: 'month',
      pri_pro_y: 'year',
      pri_team_y: 'year',
    });
    // As before cycles existed: no entry names one.
    expect(loadConfig({ BILLING_PRICE_TIERS: 'pri_a:PRO,pri_b:TEAM' }).project.priceCycles).toEqual({});
    expect(loadConfig({}).project.priceCycles).toEqual({});
    for (const [value, message] of [
      [
        'pri_x:PRO:weekly',
        'BILLING_PRICE_TIERS: price pri_x has billing cycle "weekly"; expected month or year',
      ],
      ['pri_x:PRO:Year', 'BILLING_PRICE_TIERS: price pri_x has billing cycle "Year"; expected month or year'],
      [
        'pri_x:PRO:year:2',
        'BILLING_PRICE_TIERS: expected price:TIER or price:TIER:month|year, got "pri_x:PRO:year:2"',
      ],
      ['pri_x:PRO:', 'BILLING_PRICE_TIERS: expected price:TIER or price:TIER:month|year, got "pri_x:PRO:"'],
      ['pri_x::year', 'BILLING_PRICE_TIERS: expected price:TIER or price:TIER:month|year, got "pri_x::year"'],
      [
        'pri_pro:PRO,pri_team:TEAM,pri_pro_y:PRO:year',
        'BILLING_PRICE_TIERS: pri_pro, pri_team name no billing cycle while other prices do; add :month or :year to every price',
      ],
      ['pri_x:GOLD:year', 'BILLING_PRICE_TIERS: price pri_x maps to unknown paid tier GOLD'],
    ] as const) {
      expect(() => loadConfig({ BILLING_PRICE_TIERS: value })).toThrow(new ConfigError(message));
    }
  });

  it('keeps development-only secrets out of deployed environments', () => {
    expect(loadConfig({}).email.unsubscribeSecret).not.toBeNull();
    const deployed = loadConfig({ APP_ENV: 'production' });
    expect(deployed.email.unsubscribeSecret).toBeNull();
    expect(deployed.billing.webhookSecret).toBeNull();
    expect(deployed.identity.webhookSecret).toBeNull();
  });

  it('accepts 1 to 3 attempts for provider calls (spec: at most 3 attempts)', () => {
    for (const attempts of [1, 2, 3]) {
      expect(loadConfig({ HTTP_MAX_ATTEMPTS: String(attempts) }).http.maxAttempts).toBe(attempts);
    }
  });

  it('bounds HTTP_TIMEOUT_MS so the slowest metered call ends before the reconciler refunds it', () => {
    // Every attempt timing out and every wait at the Retry-After cap, against the 5-minute orphan window.
    const worstCase = (timeoutMs: number) =>
      MAX_HTTP_ATTEMPTS * timeoutMs + (MAX_HTTP_ATTEMPTS - 1) * RETRY_AFTER_CAP_MS;
    expect(worstCase(MAX_HTTP_TIMEOUT_MS)).toBeLessThan(ORPHAN_AFTER_MS);
    expect(worstCase(MAX_HTTP_TIMEOUT_MS + 1)).toBeGreaterThanOrEqual(ORPHAN_AFTER_MS);
    const max = String(MAX_HTTP_TIMEOUT_MS);
    expect(loadConfig({ HTTP_TIMEOUT_MS: max }).http.timeoutMs).toBe(MAX_HTTP_TIMEOUT_MS);
    for (const value of [String(MAX_HTTP_TIMEOUT_MS + 1), '90000', '600000']) {
      expect(() => loadConfig({ HTTP_TIMEOUT_MS: value })).toThrow(
        `HTTP_TIMEOUT_MS: expected an integer between 1 and ${max}, got "${value}"`,
      );
    }
  });

  it('refreshes the disposable-domain list from the upstream list when deployed, never locally', () => {
    expect(DEFAULT_DISPOSABLE_DOMAINS_URL).toBe(
      'https://raw.githubusercontent.com/disposable-email-domains/disposable-email-domains/main/disposable_email_blocklist.conf',
    );
    for (const APP_ENV of ['staging', 'production']) {
      expect(loadConfig({ APP_ENV }).email.disposableListUrl).toBe(DEFAULT_DISPOSABLE_DOMAINS_URL);
      // Set but empty: explicitly off (the shipped list stays the source).
      expect(loadConfig({ APP_ENV, DISPOSABLE_DOMAINS_URL: '' }).email.disposableListUrl).toBeNull();
      expect(loadConfig({ APP_ENV, DISPOSABLE_DOMAINS_URL: '  ' }).email.disposableListUrl).toBeNull();
      expect(
        loadConfig({ APP_ENV, DISPOSABLE_DOMAINS_URL: 'https://lists.example.com/blocklist.txt' }).email
          .disposableListUrl,
      ).toBe('https://lists.example.com/blocklist.txt');
    }
    for (const APP_ENV of [undefined, 'development', 'test']) {
      expect(loadConfig({ APP_ENV }).email.disposableListUrl).toBeNull();
      expect(loadConfig({ APP_ENV, DISPOSABLE_DOMAINS_URL: '' }).email.disposableListUrl).toBeNull();
    }
    expect(
      loadConfig({ APP_ENV: 'test', DISPOSABLE_DOMAINS_URL: 'http://127.0.0.1:4000/list' }).email
        .disposableListUrl,
    ).toBe('http://127.0.0.1:4000/list');
  });

  it('gives e-mail provider calls their own retry count (the other providers keep HTTP_MAX_ATTEMPTS)', () => {
    const config = loadConfig({ EMAIL_SEND_RETRIES: '5', HTTP_MAX_ATTEMPTS: '2' });
    expect(config.email.sendRetries).toBe(5);
    expect(config.http.maxAttempts).toBe(2);
  });

  it.each([
    [{ PORT: 'abc' }, /PORT/],
    [{ APP_ENV: 'prod' }, /APP_ENV/],
    [{ DATABASE_URL: 'not a url' }, /DATABASE_URL/],
    [{ BILLING_PRICE_TIERS: 'pri_x:GOLD' }, /BILLING_PRICE_TIERS/],
    [{ BILLING_PRICE_TIERS: 'pri_x:FREE' }, /BILLING_PRICE_TIERS/],
    [{ LEAD_MAGNET_PREFIXES: 'nocolon' }, /LEAD_MAGNET_PREFIXES/],
    [{ IDENTITY_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json' }, /IDENTITY_ISSUER/],
    [{ EMAIL_MAX_REQUESTS_PER_SECOND: '0' }, /EMAIL_MAX_REQUESTS_PER_SECOND/],
    [{ HTTP_MAX_ATTEMPTS: '0' }, /HTTP_MAX_ATTEMPTS/],
    [{ HTTP_MAX_ATTEMPTS: '4' }, /HTTP_MAX_ATTEMPTS/],
    [{ HTTP_MAX_ATTEMPTS: '10' }, /HTTP_MAX_ATTEMPTS/],
    [{ HTTP_TIMEOUT_MS: '0' }, /HTTP_TIMEOUT_MS/],
    [{ HTTP_TIMEOUT_MS: '300000' }, /HTTP_TIMEOUT_MS/],
    [{ SHUTDOWN_TIMEOUT_MS: '25s' }, /SHUTDOWN_TIMEOUT_MS/],
    [{ EMAIL_SEND_RETRIES: '-1' }, /EMAIL_SEND_RETRIES/],
    [{ DISPOSABLE_DOMAINS_URL: 'not a url' }, /DISPOSABLE_DOMAINS_URL/],
    [{ DISPOSABLE_DOMAINS_URL: 'ftp://lists.example.com/list' }, /DISPOSABLE_DOMAINS_URL/],
  ])('refuses invalid values with one line naming the variable (%o)', (env, pattern) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(pattern);
  });
});

describe('loadConfig: every problem in one message (issue 20 item 4)', () => {
  it('lists every bad variable, type errors and cross-field rules alike, in one ConfigError', () => {
    const env = {
      PORT: 'abc',
      APP_ENV: 'prod',
      HTTP_MAX_ATTEMPTS: '9',
      BILLING_PRICE_TIERS: 'pri_x:GOLD',
      IDENTITY_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      EMAIL_PROVIDER: 'resend',
      ADMIN_EMAILS: 'ok@example.com,bad\u00e9@example.com',
    };
    let error: unknown;
    try {
      loadConfig(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    const named = message.split('; ').map((problem) => problem.split(':')[0]);
    expect(named.sort()).toEqual(
      [
        'ADMIN_EMAILS',
        'APP_ENV',
        'BILLING_PRICE_TIERS',
        'EMAIL_API_KEY',
        'HTTP_MAX_ATTEMPTS',
        'IDENTITY_ISSUER',
        'PORT',
      ].sort(),
    );
    expect(message).not.toContain('\n');
  });
});
