import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { ROOT } from '../support/processes.js';
import { DevWorld } from './dev-support.js';

/**
 * `npm run db:seed` against a running API and worker (with the launcher's language-model stand-in), then
 * the invariants checked on the database it filled; then `npm run db:reset` on that database.
 */
describe('npm run db:seed and db:reset (scripts/db-seed.mjs, scripts/db-reset.mjs)', () => {
  let world: DevWorld;

  beforeAll(async () => {
    world = await DevWorld.start({ llm: true });
  });

  afterAll(async () => {
    await world?.close();
  });

  const rows = <T>(sql: string) => world.api.prisma.$queryRawUnsafe<T[]>(sql);

  it('fills every tier with subscriptions, credit history, saved searches and a finished broadcast', async () => {
    const seeded = await world.run('db-seed.mjs');
    expect(seeded).toEqual({ code: 0, output: expect.stringContaining('db:seed: done') });

    // Every configured tier has a user on it.
    const tiers = await rows<{ current_tier: string }>('SELECT DISTINCT current_tier FROM users');
    expect(tiers.map((t) => t.current_tier).sort()).toEqual(
      Object.keys(world.env.config.project.tiers).sort(),
    );
    // Subscriptions in the states a demo shows.
    const statuses = await rows<{ status: string }>('SELECT DISTINCT status::text FROM subscriptions');
    expect(statuses.map((s) => s.status).sort()).toEqual(['ACTIVE', 'CANCELED', 'PAST_DUE']);
    // The ledger invariant, for every user: the cached balance is the sum of the ledger.
    const mismatched = await rows<{ id: string }>(
      `SELECT u.id FROM users u LEFT JOIN credit_transactions c ON c.user_id = u.id
        GROUP BY u.id, u.credit_balance HAVING u.credit_balance <> COALESCE(SUM(c.delta), 0)`,
    );
    expect(mismatched).toEqual([]);
    // Credit history: grants (checkout, renewal) and charged completions.
    const [history] = await rows<{ grants: bigint; charges: bigint }>(
      `SELECT count(*) FILTER (WHERE delta > 0) AS grants, count(*) FILTER (WHERE delta < 0) AS charges
         FROM credit_transactions`,
    );
    expect(Number(history.grants)).toBeGreaterThanOrEqual(3);
    expect(Number(history.charges)).toBeGreaterThanOrEqual(3);
    const [{ count: searches }] = await rows<{ count: bigint }>('SELECT count(*) FROM saved_searches');
    expect(Number(searches)).toBeGreaterThanOrEqual(10);
    const broadcasts = await rows<{ status: string; finished_at: Date | null }>(
      'SELECT status::text, finished_at FROM broadcast_runs',
    );
    expect(broadcasts).toHaveLength(1);
    expect(broadcasts[0].finished_at).not.toBeNull();

    // A second run is refused before it changes anything.
    const [before] = await rows<{ n: bigint }>('SELECT count(*) AS n FROM subscriptions');
    const again = await world.run('db-seed.mjs');
    expect(again).toEqual({ code: 2, output: expect.stringContaining('db:reset') });
    const [after] = await rows<{ n: bigint }>('SELECT count(*) AS n FROM subscriptions');
    expect(after.n).toBe(before.n);
  }, 180_000);

  it('refuses to reset a database that is not on this machine, or a deployed environment', async () => {
    const remote = await world.run('db-reset.mjs', [], {
      DATABASE_URL: 'postgresql://postgres@db.example.com:5432/subscription_service',
    });
    expect(remote).toEqual({ code: 2, output: expect.stringContaining('not on this machine') });
    const deployed = await world.run('db-reset.mjs', [], { APP_ENV: 'production' });
    expect(deployed).toEqual({ code: 2, output: expect.stringContaining('APP_ENV is production') });
    const [{ n }] = await rows<{ n: bigint }>('SELECT count(*) AS n FROM users');
    expect(Number(n)).toBeGreaterThan(1);
  });

  it('resets the local database: migrations applied, only the demo admin, no Redis keys of the prefix', async () => {
    // The processes would reconnect to the new database; stop them as a developer stops npm start.
    await world.stopProcesses();
    const prefix = world.env.env.REDIS_KEY_PREFIX;
    const reset = await world.run('db-reset.mjs');
    expect(reset).toEqual({ code: 0, output: expect.stringContaining('db:reset: done') });

    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: world.env.env.DATABASE_URL });
    await client.connect();
    try {
      const users = await client.query<{ email: string; credit_balance: number }>(
        'SELECT email, credit_balance FROM users',
      );
      expect(users.rows).toEqual([{ email: 'admin@example.com', credit_balance: 0 }]);
      const migrations = await client.query(
        'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL',
      );
      const dirs = readdirSync(join(ROOT, 'prisma', 'migrations'), { withFileTypes: true }).filter((d) =>
        d.isDirectory(),
      );
      expect(migrations.rowCount).toBe(dirs.length);
      for (const table of ['subscriptions', 'credit_transactions', 'saved_searches', 'broadcast_runs']) {
        const { rows: counted } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
        expect({ table, n: counted[0].n }).toEqual({ table, n: '0' });
      }
    } finally {
      await client.end();
    }
    const redis = new Redis(world.env.env.REDIS_URL);
    try {
      expect(await redis.keys(`${prefix}:*`)).toEqual([]);
    } finally {
      redis.disconnect();
    }
  }, 120_000);
});
