import { createUser } from '../factories/user.factory.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { ConflictError, InsufficientCreditsError, NotFoundError } from '../../src/common/errors/app-error.js';
import { UnitOfWork } from '../../src/infra/prisma/unit-of-work.js';
import { CreditsRepository } from '../../src/modules/credits/credits.repository.js';
import {
  CREDIT_KINDS,
  CreditsService,
  type LedgerResult,
} from '../../src/modules/credits/credits.service.js';
import { expectLedgerConsistent } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('credit ledger on real PostgreSQL', () => {
  let env: TestEnv;
  let api: ApiApp;
  let credits: CreditsService;

  beforeAll(async () => {
    // More connections than the default so 100 transactions really contend for the user row.
    env = await TestEnv.create({ env: { DATABASE_POOL_SIZE: '20' } });
    api = await env.startApi();
    credits = api.app.get(CreditsService);
  });
  afterEach(() => expectLedgerConsistent(api.prisma));
  afterAll(() => env.close());

  const grant = (userId: string, amount: number, jobId: string, kind?: string) =>
    api.prisma.$transaction((tx) => credits.grant(tx, { userId, amount, jobId, kind }));
  const deduct = (userId: string, amount: number, jobId: string) =>
    api.app.get(UnitOfWork).run((tx) => credits.deduct(tx, { userId, amount, jobId }));

  it('lets exactly 10 of 100 concurrent deducts through on a balance of 10, never going negative', async () => {
    const user = await createUser(api.prisma);
    await grant(user.id, 10, `grant-${user.id}`);
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) => deduct(user.id, 1, `spend-${user.id}-${i}`)),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(90);
    for (const r of refused) {
      expect(r.reason).toBeInstanceOf(InsufficientCreditsError);
      expect((r.reason as InsufficientCreditsError).extensions).toEqual({ balance: 0, required: 1 });
    }
    expect(await credits.balance(user.id)).toBe(0);
    expect(await api.app.get(CreditsRepository).sumOfDeltas(api.prisma, user.id)).toBe(0);
    expect(await api.prisma.creditTransaction.count({ where: { userId: user.id, kind: 'spend' } })).toBe(10);
  });

  it('records one row when the same job id is delivered 20 times concurrently', async () => {
    const user = await createUser(api.prisma);
    await grant(user.id, 5, `grant-${user.id}`);
    const results = await Promise.all(Array.from({ length: 20 }, () => deduct(user.id, 3, `job-${user.id}`)));
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    // Every delivery answers with the first result, none fails (not even as "insufficient").
    expect(new Set(results.map((r) => r.transaction.id)).size).toBe(1);
    expect(results[0].transaction).toMatchObject({
      userId: user.id,
      delta: -3,
      kind: 'spend',
      jobId: `job-${user.id}`,
    });
    expect(await api.prisma.creditTransaction.count({ where: { jobId: `job-${user.id}` } })).toBe(1);
    expect(await credits.balance(user.id)).toBe(2);
  });

  // The metered call deducts outside any caller transaction: one statement on the pool, with its hold.
  const deductAlone = (userId: string, amount: number, jobId: string) =>
    credits.deductStandalone({ userId, amount, jobId }, { hold: true });

  it('keeps the same guarantees when the deduction is its own one-statement transaction', async () => {
    const user = await createUser(api.prisma);
    await grant(user.id, 10, `grant-${user.id}`);
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => deductAlone(user.id, 1, `alone-${user.id}-${i}`)),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected'))
      expect(r.reason).toBeInstanceOf(InsufficientCreditsError);
    expect(await credits.balance(user.id)).toBe(0);
    // One hold per applied deduction, each for its amount.
    expect(await api.prisma.creditHold.count({ where: { userId: user.id } })).toBe(10);

    const other = await createUser(api.prisma);
    await grant(other.id, 5, `grant-${other.id}`);
    const again = await Promise.all(
      Array.from({ length: 20 }, () => deductAlone(other.id, 3, `job-${other.id}`)),
    );
    expect(again.filter((r) => r.applied)).toHaveLength(1);
    expect(new Set(again.map((r) => r.transaction.id)).size).toBe(1);
    expect(await credits.balance(other.id)).toBe(2);
    expect(await api.prisma.creditHold.findMany({ where: { userId: other.id } })).toEqual([
      expect.objectContaining({ jobId: `job-${other.id}`, amount: 3 }),
    ]);
  });

  it('grants once per (job id, kind), concurrently and on a later redelivery', async () => {
    const user = await createUser(api.prisma);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => grant(user.id, 100, `evt_${user.id}`)),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    const again = await grant(user.id, 999, `evt_${user.id}`);
    expect(again).toMatchObject({ applied: false, balance: 100 });
    expect(again.transaction.delta).toBe(100);
    // The same job id under another kind is another fact.
    await grant(user.id, 5, `evt_${user.id}`, CREDIT_KINDS.adjustment);
    expect(await credits.balance(user.id)).toBe(105);
    expect(await api.prisma.creditTransaction.count({ where: { userId: user.id } })).toBe(2);
  });

  it('returns the first result to a redelivered deduct even when the balance no longer covers it', async () => {
    const user = await createUser(api.prisma);
    await grant(user.id, 4, `grant-${user.id}`);
    const first = await deduct(user.id, 4, `once-${user.id}`);
    const second: LedgerResult = await deduct(user.id, 4, `once-${user.id}`);
    expect(second).toMatchObject({ applied: false, balance: 0 });
    expect(second.transaction.id).toBe(first.transaction.id);
    await expect(deduct(user.id, 1, `new-${user.id}`)).rejects.toBeInstanceOf(InsufficientCreditsError);
  });

  it('rolls the row and the balance back with the caller transaction, keeping the lock until then', async () => {
    const user = await createUser(api.prisma);
    await grant(user.id, 10, `grant-${user.id}`);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const holder = api.app
      .get(UnitOfWork)
      .run(async (tx) => {
        await credits.deduct(tx, { userId: user.id, amount: 10, jobId: `held-${user.id}` });
        order.push('holder deducted');
        await gate;
        throw new Error('caller failed after the deduct');
      })
      .catch((err: Error) => err.message);
    await waitFor(async () => order.length === 1);
    const waiter = deduct(user.id, 10, `waiter-${user.id}`).then((r) => {
      order.push('waiter deducted');
      return r;
    });
    await waitFor(async () => {
      const [row] = await api.prisma.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      return row.n > 0;
    });
    // The waiter is blocked on the user row until the holder's transaction ends.
    expect(order).toEqual(['holder deducted']);
    release();
    expect(await holder).toBe('caller failed after the deduct');
    expect((await waiter).applied).toBe(true);
    expect(await api.prisma.creditTransaction.count({ where: { jobId: `held-${user.id}` } })).toBe(0);
    expect(await credits.balance(user.id)).toBe(0);
  });

  it('refuses negative and fractional amounts instead of flipping their sign', async () => {
    const user = await createUser(api.prisma);
    await expect(grant(user.id, -5, `neg-${user.id}`)).rejects.toBeInstanceOf(RangeError);
    await expect(deduct(user.id, -5, `neg-${user.id}`)).rejects.toBeInstanceOf(RangeError);
    await expect(grant(user.id, 1.5, `frac-${user.id}`)).rejects.toBeInstanceOf(RangeError);
    expect(await credits.balance(user.id)).toBe(0);
  });

  it('refuses a job id already recorded for another user and an unknown user', async () => {
    const [a, b] = [await createUser(api.prisma), await createUser(api.prisma)];
    await grant(a.id, 1, `shared-${a.id}`);
    await expect(grant(b.id, 1, `shared-${a.id}`)).rejects.toBeInstanceOf(ConflictError);
    await expect(grant('00000000-0000-4000-8000-000000000000', 1, 'nobody')).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(await credits.balance(b.id)).toBe(0);
  });

  it('makes the database itself refuse a negative cached balance', async () => {
    const user = await createUser(api.prisma);
    await expect(
      api.prisma.$executeRaw`UPDATE users SET credit_balance = -1 WHERE id = ${user.id}::uuid`,
    ).rejects.toThrow(/negative/);
  });

  it('removes the ledger with the user (cascade)', async () => {
    const user = await createUser(api.prisma);
    await grant(user.id, 3, `grant-${user.id}`);
    await api.prisma.user.delete({ where: { id: user.id } });
    expect(await api.prisma.creditTransaction.count({ where: { userId: user.id } })).toBe(0);
  });
});
