import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../infra/prisma/prisma.service.js';
import type { CreditTransaction } from '../../generated/prisma/client.js';

export type LedgerDetails = Record<string, string | number | boolean | null>;

export interface LedgerRow {
  userId: string;
  delta: number;
  kind: string;
  jobId: string;
  details?: LedgerDetails;
}

export interface InsertOutcome {
  /** The row now recorded for (job_id, kind): the new one, or the one a previous delivery wrote. */
  row: CreditTransaction | null;
  inserted: boolean;
  /** Cached balance after the insert (only when inserted). */
  balance: number | null;
}

interface RawLedgerRow {
  inserted: boolean;
  id: string;
  user_id: string;
  delta: number;
  kind: string;
  job_id: string;
  details: unknown;
  created_at: Date;
  balance: number | null;
}

const toTransaction = (raw: RawLedgerRow): CreditTransaction => ({
  id: raw.id,
  userId: raw.user_id,
  delta: raw.delta,
  kind: raw.kind,
  jobId: raw.job_id,
  details: raw.details as CreditTransaction['details'],
  createdAt: raw.created_at,
});

@Injectable()
export class CreditsRepository {
  /** Locks the user row until the caller's transaction ends; returns the cached balance (null: no user). */
  async lockBalance(tx: Tx, userId: string): Promise<number | null> {
    const rows = await tx.$queryRaw<{ credit_balance: number }[]>`
      SELECT credit_balance FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    return rows.length === 0 ? null : rows[0].credit_balance;
  }

  /**
   * One statement, run after lockBalance (so its snapshot sees every committed row of this user): returns
   * the row already recorded for (job_id, kind), or inserts one when `allowed` and moves the cached
   * balance in the same statement, so the two can never disagree. Neither means "not allowed".
   */
  async insertUnlessRecorded(tx: Tx, row: LedgerRow, allowed: boolean): Promise<InsertOutcome> {
    const details = JSON.stringify(row.details ?? {});
    const rows = await tx.$queryRaw<RawLedgerRow[]>`
      WITH existing AS (
        SELECT id, user_id, delta, kind, job_id, details, created_at
        FROM credit_transactions WHERE job_id = ${row.jobId} AND kind = ${row.kind}
      ), ins AS (
        INSERT INTO credit_transactions (id, user_id, delta, kind, job_id, details)
        SELECT gen_random_uuid(), ${row.userId}::uuid, ${row.delta}::int, ${row.kind}, ${row.jobId}, ${details}::jsonb
        WHERE ${allowed}::boolean AND NOT EXISTS (SELECT 1 FROM existing)
        ON CONFLICT (job_id, kind) DO NOTHING
        RETURNING id, user_id, delta, kind, job_id, details, created_at
      ), upd AS (
        UPDATE users SET credit_balance = users.credit_balance + ins.delta
        FROM ins WHERE users.id = ins.user_id
        RETURNING users.credit_balance
      )
      SELECT true AS inserted, ins.*, (SELECT credit_balance FROM upd) AS balance FROM ins
      UNION ALL
      SELECT false AS inserted, existing.*, NULL::int AS balance FROM existing`;
    if (rows.length === 0) return { row: null, inserted: false, balance: null };
    return { row: toTransaction(rows[0]), inserted: rows[0].inserted, balance: rows[0].balance };
  }

  findByJob(db: Db, jobId: string, kind: string): Promise<CreditTransaction | null> {
    return db.creditTransaction.findUnique({ where: { jobId_kind: { jobId, kind } } });
  }

  async balance(db: Db, userId: string): Promise<number> {
    const user = await db.user.findUnique({ where: { id: userId }, select: { creditBalance: true } });
    return user?.creditBalance ?? 0;
  }

  /** The spec's definition (sum of deltas); the cached column must always equal it. */
  async sumOfDeltas(db: Db, userId: string): Promise<number> {
    const rows = await db.$queryRaw<{ sum: bigint | null }[]>`
      SELECT SUM(delta)::bigint AS sum FROM credit_transactions WHERE user_id = ${userId}::uuid`;
    return Number(rows[0]?.sum ?? 0);
  }

  /** The caller's ledger, newest first (index on (user_id, created_at)). */
  async page(
    db: Db,
    userId: string,
    skip: number,
    take: number,
  ): Promise<{ items: CreditTransaction[]; total: number }> {
    // Sequential: inside a transaction the two share one connection anyway.
    const items = await db.creditTransaction.findMany({
      where: { userId },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      skip,
      take,
    });
    const total = await db.creditTransaction.count({ where: { userId } });
    return { items, total };
  }
}
