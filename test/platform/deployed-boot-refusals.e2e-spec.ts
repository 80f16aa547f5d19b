import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEV_BILLING_WEBHOOK_SECRET, DEV_IDENTITY_WEBHOOK_SECRET } from '../../src/config/env.js';
import { DeployedWorld } from '../support/deployed.js';
import { freePort, type RunningProcess, startCompiled, waitForHttp } from '../support/processes.js';
import { TEST_SECRETS, TestEnv } from '../support/test-env.js';

/**
 * Issue 14 item 3: the unsafe production settings, each refused by a real deployed process with one line
 * naming the check, after the spec's checks. The same settings minus the unsafe one boot (last test).
 */
describe('deployed boot refuses unsafe production settings', () => {
  let env: TestEnv;
  let world: DeployedWorld;
  const running: RunningProcess[] = [];

  beforeAll(async () => {
    env = await TestEnv.create();
    world = await DeployedWorld.start(env);
  });

  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await world.close();
    await env.close();
  });

  const boot = async (entry: 'main' | 'worker', extra: Record<string, string>) => {
    const port = String(await freePort());
    const p = startCompiled(entry, { ...world.vars, PORT: port, WORKER_PORT: port, ...extra });
    running.push(p);
    return { p, port };
  };

  const refusal = async (extra: Record<string, string>, entry: 'main' | 'worker' = 'main') => {
    const { p } = await boot(entry, extra);
    const code = await p.exited;
    return { code, lines: p.stderr().trim().split('\n') };
  };

  it.each<[string, string, Record<string, string>, RegExp]>([
    [
      'a development-default IDENTITY_WEBHOOK_SECRET_PREVIOUS',
      'previous_secrets',
      { IDENTITY_WEBHOOK_SECRET_PREVIOUS: DEV_IDENTITY_WEBHOOK_SECRET },
      /IDENTITY_WEBHOOK_SECRET_PREVIOUS is the public development default$/,
    ],
    [
      'a development-default BILLING_WEBHOOK_SECRET_PREVIOUS',
      'previous_secrets',
      { BILLING_WEBHOOK_SECRET_PREVIOUS: DEV_BILLING_WEBHOOK_SECRET },
      /BILLING_WEBHOOK_SECRET_PREVIOUS is the public development default$/,
    ],
    [
      'a DATABASE_URL without sslmode (the server is reachable in plain text)',
      'database_tls',
      { DATABASE_URL: '' },
      /DATABASE_URL must use TLS/,
    ],
    ['sslmode=disable', 'database_tls', { DATABASE_URL: 'sslmode=disable' }, /sslmode=disable/],
    [
      'the console e-mail provider',
      'email_provider',
      { EMAIL_PROVIDER: 'console' },
      /EMAIL_PROVIDER is console/,
    ],
    ['an unset e-mail provider', 'email_provider', { EMAIL_PROVIDER: '' }, /EMAIL_PROVIDER is console/],
    ['an unset BILLING_API_URL', 'billing_api_url', { BILLING_API_URL: '' }, /BILLING_API_URL is unset/],
    [
      'unset IDENTITY_JWKS_URL and IDENTITY_ISSUER',
      'identity_provider',
      { IDENTITY_JWKS_URL: '', IDENTITY_ISSUER: '' },
      /IDENTITY_JWKS_URL is unset/,
    ],
    [
      'neither IDENTITY_AUDIENCE nor IDENTITY_AUTHORIZED_PARTIES',
      'identity_audience',
      { IDENTITY_AUDIENCE: '' },
      /IDENTITY_ALLOW_ANY_AUDIENCE=true/,
    ],
    ['CORS origin null', 'cors_origin_format', { CORS_ORIGINS: 'https://app.example.com,null' }, /"null"/],
    ['CORS origin *', 'cors_origin_format', { CORS_ORIGINS: '*' }, /"\*"/],
    [
      'a CORS origin with a path',
      'cors_origin_format',
      { CORS_ORIGINS: 'https://app.example.com/app' },
      /app"/,
    ],
    [
      'a CORS origin with a trailing slash',
      'cors_origin_format',
      { CORS_ORIGINS: 'https://app.example.com/' },
      /\/"/,
    ],
    ['CORS origin 127.0.0.2', 'cors_origin_format', { CORS_ORIGINS: 'https://127.0.0.2' }, /loopback/],
    ['CORS origin 0.0.0.0', 'cors_origin_format', { CORS_ORIGINS: 'https://0.0.0.0:8443' }, /unspecified/],
    [
      'CORS origin ::ffff:127.0.0.1',
      'cors_origin_format',
      { CORS_ORIGINS: 'https://[::ffff:7f00:1]' },
      /loopback/,
    ],
    ['CORS origin ::', 'cors_origin_format', { CORS_ORIGINS: 'https://[::]:8443' }, /unspecified/],
    // Caught earlier by the spec's own check, which keeps its outcome.
    ['CORS origin localhost over https', 'cors_origins', { CORS_ORIGINS: 'https://localhost' }, /localhost/],
    ['CORS origin ::1', 'cors_origins', { CORS_ORIGINS: 'https://[::1]' }, /::1/],
    [
      'one value for the unsubscribe and billing secrets',
      'secret_reuse',
      { EMAIL_UNSUBSCRIBE_SECRET: TEST_SECRETS.BILLING_WEBHOOK_SECRET },
      /^EMAIL_UNSUBSCRIBE_SECRET has the same value as BILLING_WEBHOOK_SECRET/,
    ],
    [
      'a webhook secret reused as an API key',
      'secret_reuse',
      { LLM_API_KEY: TEST_SECRETS.BILLING_WEBHOOK_SECRET },
      /LLM_API_KEY has the same value as BILLING_WEBHOOK_SECRET/,
    ],
  ])('refuses %s', async (_name, check, extra, reason) => {
    const overrides = { ...extra };
    // DATABASE_URL overrides are relative to the reachable server: '' = plain text, else a query string.
    if ('DATABASE_URL' in extra) {
      overrides.DATABASE_URL = extra.DATABASE_URL
        ? `${env.config.database.url}?${extra.DATABASE_URL}`
        : env.config.database.url;
    }
    const { code, lines } = await refusal(overrides);
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^boot refused \\[${check}\\]: `));
    expect(lines[0].replace(/^boot refused \[\w+\]: /, '')).toMatch(reason);
    for (const secret of Object.values(TEST_SECRETS)) expect(lines[0]).not.toContain(secret);
  });

  it('refuses the worker too', async () => {
    const { code, lines } = await refusal({ EMAIL_PROVIDER: 'console' }, 'worker');
    expect(code).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^boot refused \[email_provider\]: /)]);
  });

  it('keeps the spec refusals first: a TBD name with an unsafe new setting is project_config', async () => {
    const { lines } = await refusal({
      COMPANY_LEGAL_NAME: 'TBD',
      EMAIL_PROVIDER: 'console',
      CORS_ORIGINS: '*',
    });
    expect(lines).toEqual([expect.stringMatching(/^boot refused \[project_config\]: /)]);
  });

  it('boots with authorized parties instead of an audience, or an explicit any-audience', async () => {
    const variants: Record<string, string>[] = [
      { IDENTITY_AUDIENCE: '', IDENTITY_AUTHORIZED_PARTIES: 'https://app.example.com' },
      { IDENTITY_AUDIENCE: '', IDENTITY_ALLOW_ANY_AUDIENCE: 'true' },
    ];
    for (const extra of variants) {
      const { p, port } = await boot('main', extra);
      await waitForHttp(`http://127.0.0.1:${port}/health`);
      expect((await fetch(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200);
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
    }
  });
});
