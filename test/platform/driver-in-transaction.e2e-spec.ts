import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TransactionClosedError } from '../../src/infra/prisma/driver.js';
import { driverOf, type PrismaService, type Tx } from '../../src/infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../src/infra/prisma/unit-of-work.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

// Issue 15 item 3: a repository's hot statement runs on the driver (node-postgres) inside the caller's
// Prisma transaction. driverOf(tx) must be that transaction's own connection, for every interactive
// transaction, concurrent ones included, and must refuse once the transaction has ended, so a late
// statement can never land in another caller's transaction. Real PostgreSQL.

describe('driverOf: driver statements inside a Prisma transaction', () => {
  let env: TestEnv;
  let api: ApiApp;
  let prisma: PrismaService;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    prisma = api.prisma;
    await prisma.$executeRawUnsafe('CREATE TABLE IF NOT EXISTS driver_probe (v text)');
  });
  afterAll(async () => {
    await prisma.$executeRawUnsafe('DROP TABLE IF EXISTS driver_probe');
    await env.close();
  });

  const txid = async (tx: Tx) =>
    (await tx.$queryRaw<{ id: string }[]>`SELECT txid_current()::text AS id`)[0].id;
  const driverTxid = async (tx: Tx) =>
    (await driverOf(tx).query<{ id: string }>('SELECT txid_current()::text AS id')).rows[0].id;

  it('runs on the connection of the transaction it was handed, for concurrent transactions too', async () => {
    const pairs = await Promise.all(
      Array.from({ length: 8 }, () =>
        prisma.$transaction(async (tx) => {
          const viaPrisma = await txid(tx);
          const viaDriver = await driverTxid(tx);
          return [viaPrisma, viaDriver, await txid(tx)];
        }),
      ),
    );
    for (const [viaPrisma, viaDriver, after] of pairs) {
      expect(viaDriver).toBe(viaPrisma);
      expect(after).toBe(viaPrisma);
    }
    // Eight transactions, eight ids: no two shared a connection's transaction.
    expect(new Set(pairs.map(([id]) => id)).size).toBe(8);
  });

  it('writes with the transaction: rolled back with it, committed with it', async () => {
    await expect(
      api.app.get(UnitOfWork).run(async (tx) => {
        await driverOf(tx).query('INSERT INTO driver_probe (v) VALUES ($1)', ['rolled-back']);
        throw new Error('the caller failed');
      }),
    ).rejects.toThrow('the caller failed');
    await api.app.get(UnitOfWork).run(async (tx) => {
      await driverOf(tx).query('INSERT INTO driver_probe (v) VALUES ($1)', ['committed']);
    });
    const rows = await prisma.$queryRawUnsafe<{ v: string }[]>('SELECT v FROM driver_probe ORDER BY v');
    expect(rows.map((r) => r.v)).toEqual(['committed']);
  });

  it('refuses a statement after the transaction ended, and keeps the connection for its next owner', async () => {
    let kept: Tx | undefined;
    await prisma.$transaction(async (tx) => {
      kept = tx;
      await driverTxid(tx);
    });
    await expect(driverOf(kept!).query('SELECT 1')).rejects.toBeInstanceOf(TransactionClosedError);
    // The pool's connections still work for everyone else.
    await expect(prisma.$transaction(async (tx) => driverTxid(tx))).resolves.toMatch(/^\d+$/);
  });

  it('gives the pool for the root client and refuses a client it did not open', async () => {
    expect(driverOf(prisma)).toBe(prisma.pool);
    expect(() => driverOf({} as Tx)).toThrow(/neither the root client nor a transaction/);
  });
});
