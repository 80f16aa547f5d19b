import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ROOT } from '../support/processes.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';

/**
 * `npm run dev:billing` against a running API and worker: the script signs in with a development token
 * (served by the launcher's own development JWKS), opens a checkout through the API, and sends signed
 * Paddle notifications to /webhooks/billing; the worker applies them. Nothing here talks to the service
 * except the script.
 */
describe('npm run dev:billing (scripts/dev-billing.mjs)', () => {
  let env: TestEnv;
  let dataDir: string;
  let apiUrl: string;
  let stopJwks: () => Promise<void>;
  let prisma: ApiApp['prisma'];

  /** Runs the script as `npm run dev:billing -- ...args` would, with the test's API and secret. */
  function run(args: string[], overrides: Record<string, string> = {}) {
    return new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, 'scripts', 'dev-billing.mjs'), ...args], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          LOCAL_DATA_DIR: dataDir,
          DEV_BILLING_API_URL: apiUrl,
          BILLING_WEBHOOK_SECRET: TEST_SECRETS.BILLING_WEBHOOK_SECRET,
          ...overrides,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('exit', (code) => resolve({ code, output }));
    });
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'dev-billing-'));
    // The launcher's development identity provider, with its key in the throwaway data directory.
    process.env.LOCAL_DATA_DIR = dataDir;
    const identity = (await import('../../scripts/local/identity.mjs')) as {
      DEV_ISSUER: string;
      startDevIdentity: (port: number) => Promise<string>;
    };
    const processes = (await import('../../scripts/lib/processes.mjs')) as {
      started: { stop: () => Promise<void> }[];
    };
    const jwksUrl = await identity.startDevIdentity(0);
    const entry = processes.started.pop()!;
    stopJwks = entry.stop;
    env = await TestEnv.create({ env: { IDENTITY_JWKS_URL: jwksUrl, IDENTITY_ISSUER: identity.DEV_ISSUER } });
    const api = await env.startApi();
    prisma = api.prisma;
    await api.app.listen(0, '127.0.0.1');
    apiUrl = `http://127.0.0.1:${(api.app.getHttpServer().address() as { port: number }).port}`;
    await env.startWorker();
  });

  afterAll(async () => {
    await env?.close();
    await stopJwks?.();
    delete process.env.LOCAL_DATA_DIR;
    rmSync(dataDir, { recursive: true, force: true });
  });

  const userRow = (email: string) =>
    prisma.user.findFirstOrThrow({ where: { email }, include: { subscriptions: true } });
  const ledger = async (userId: string) => {
    const rows = await prisma.creditTransaction.findMany({ where: { userId } });
    return {
      sum: rows.reduce((total, row) => total + row.delta, 0),
      grants: rows.filter((r) => r.delta > 0),
    };
  };

  it('subscribes, renews, goes past due and cancels through the webhook path', async () => {
    const email = 'buyer@example.com';
    const subscribe = await run([email, 'PRO']);
    expect(subscribe).toEqual({ code: 0, output: expect.stringContaining('PRO ACTIVE') });
    let user = await userRow(email);
    expect(user.currentTier).toBe('PRO');
    expect(user.subscriptions).toHaveLength(1);
    expect(user.subscriptions[0]).toMatchObject({ status: 'ACTIVE', tier: 'PRO' });
    const monthly = env.config.project.tiers.PRO.monthlyCredits;
    const afterSubscribe = await ledger(user.id);
    expect(afterSubscribe.sum).toBe(monthly);
    expect(user.creditBalance).toBe(afterSubscribe.sum);
    const periodEnd = user.subscriptions[0].currentPeriodEnd!;

    expect(await run([email, 'PRO', 'renew'])).toEqual({ code: 0, output: expect.any(String) });
    user = await userRow(email);
    expect(user.subscriptions[0].currentPeriodEnd!.getTime()).toBeGreaterThan(periodEnd.getTime());
    const afterRenew = await ledger(user.id);
    expect(afterRenew.grants).toHaveLength(afterSubscribe.grants.length + 1);
    expect(user.creditBalance).toBe(afterRenew.sum);

    expect(await run([email, 'PRO', 'past_due'])).toEqual({ code: 0, output: expect.any(String) });
    expect((await userRow(email)).subscriptions[0].status).toBe('PAST_DUE');

    expect(await run([email, 'PRO', 'cancel'])).toEqual({ code: 0, output: expect.any(String) });
    user = await userRow(email);
    expect(user.subscriptions[0].status).toBe('CANCELED');
    expect(user.currentTier).toBe('FREE');
  }, 90_000);

  it('is refused by the webhook intake when signed with another secret, and nothing changes', async () => {
    const email = 'wrong-secret@example.com';
    const result = await run([email, 'TEAM'], {
      BILLING_WEBHOOK_SECRET: 'not-the-secret-of-this-service-0123456789',
    });
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/POST \/webhooks\/billing subscription\.created: 40[01]/);
    const user = await userRow(email);
    expect(user.subscriptions).toEqual([]);
    expect(user.currentTier).toBe('FREE');
  }, 60_000);

  it('explains its usage and refuses an unknown event or tier', async () => {
    expect(await run(['buyer@example.com'])).toEqual({ code: 2, output: expect.stringContaining('usage:') });
    expect((await run(['buyer@example.com', 'PRO', 'refund'])).output).toMatch(/unknown event "refund"/);
    const tier = await run(['buyer@example.com', 'GOLD']);
    expect(tier.code).toBe(2);
    expect(tier.output).toMatch(/POST \/api\/v1\/billing\/checkout \{tier: GOLD\}: 4\d\d/);
  }, 60_000);
});
