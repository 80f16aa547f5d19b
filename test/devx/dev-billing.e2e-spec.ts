import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DevWorld } from './dev-support.js';

/**
 * `npm run dev:billing` against a running API and worker: the script signs in with a development token
 * (served by the launcher's own development JWKS), opens a checkout through the API, and sends signed
 * Paddle notifications to /webhooks/billing; the worker applies them. Nothing here talks to the service
 * except the script.
 */
describe('npm run dev:billing (scripts/dev-billing.mjs)', () => {
  let world: DevWorld;
  const run = (args: string[], overrides: Record<string, string> = {}) =>
    world.run('dev-billing.mjs', args, overrides);

  beforeAll(async () => {
    world = await DevWorld.start();
  });

  afterAll(async () => {
    await world?.close();
  });

  const userRow = (email: string) =>
    world.api.prisma.user.findFirstOrThrow({ where: { email }, include: { subscriptions: true } });
  const ledger = async (userId: string) => {
    const rows = await world.api.prisma.creditTransaction.findMany({ where: { userId } });
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
    const monthly = world.env.config.project.tiers.PRO.monthlyCredits;
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

  it('buys a credit pack: the one-time transaction grants its credits as purchased, once', async () => {
    const email = 'pack-buyer@example.com';
    const [pack] = Object.entries(world.env.config.project.creditPacks);
    expect(pack).toBeDefined();
    const [priceId, credits] = pack;
    const bought = await run([email, priceId]);
    expect(bought).toEqual({ code: 0, output: expect.stringContaining(`${credits} purchased`) });
    const user = await userRow(email);
    expect(user.currentTier).toBe('FREE');
    const rows = await world.api.prisma.creditTransaction.findMany({ where: { userId: user.id } });
    expect(rows.map((row) => [row.kind, row.delta])).toEqual([['purchase', credits]]);
    expect(user.purchasedCredits).toBe(credits);
    expect(user.creditBalance).toBe((await ledger(user.id)).sum);
    expect((await run([email, priceId, 'renew'])).output).toMatch(/a credit pack is bought, not renew/);
  }, 60_000);

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

  it('names PORT and DEV_BILLING_API_URL when nothing answers where it looks for the API', async () => {
    // npm start on another port (PORT=3500 in its own terminal): this terminal's script still looks at 3000.
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const missed = await run(['buyer@example.com', 'PRO'], {
      DEV_BILLING_API_URL: `http://127.0.0.1:${closed}`,
    });
    expect(missed.code).toBe(1);
    expect(missed.output).toMatch(/ECONNREFUSED/);
    expect(missed.output).toMatch(/PORT/);
    expect(missed.output).toMatch(/DEV_BILLING_API_URL/);
  }, 60_000);
});
