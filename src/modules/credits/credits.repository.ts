import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../infra/prisma/prisma.service.js';
import type { CreditTransaction } from '../../generated/prisma/client.js';

export interface LedgerRow {
  userId: string;
  delta: number;
  kind: string;
  jobId: string;
  details?: Record<string, string | number | boolean | null>;
}

@Injectable()
export class CreditsRepository {
  /** Locks the user row until the caller's transaction ends; returns the cached balance. */
  async lockBalance(tx: Tx, userId: string): Promise<number | null> {
    const rows = await tx.$queryRaw<{ credit_balance: number }[]>`
      SELECT credit_balance FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    return rows.length === 0 ? null : rows[0].credit_balance;
  }

  /**
   * Inserts a ledger row unless (job_id, kind) exists, and moves the cached balance in the same
   * statement, so the two can never disagree. Returns null when the row already existed.
   */
  async insertAndApply(tx: Tx, row: LedgerRow): Promise<CreditTransaction | null> {
    const inserted = await tx.$queryRaw<{ id: string }[]>`
      WITH ins AS (
        INSERT INTO credit_transactions (id, user_id, delta, kind, job_id, details)
        VALUES (gen_random_uuid(), ${row.userId}::uuid, ${row.delta}, ${row.kind}, ${row.jobId}, ${JSON.stringify(row.details ?? {})}::jsonb)
        ON CONFLICT (job_id, kind) DO NOTHING
        RETURNING id, user_id, delta
      ), upd AS (
        UPDATE users SET credit_balance = credit_balance + ins.delta FROM ins WHERE users.id = ins.user_id
      )
      SELECT id FROM ins`;
    if (inserted.length === 0) return null;
    return tx.creditTransaction.findUniqueOrThrow({ where: { id: inserted[0].id } });
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
}
