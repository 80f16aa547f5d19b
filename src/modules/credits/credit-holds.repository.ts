import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../infra/prisma/prisma.service.js';
import type { CreditHold } from '../../generated/prisma/client.js';

@Injectable()
export class CreditHoldsRepository {
  find(db: Db, jobId: string): Promise<CreditHold | null> {
    return db.creditHold.findUnique({ where: { jobId } });
  }

  /**
   * Deletes the hold and returns it; null when someone else closed it first. The DELETE is the claim:
   * of two transactions closing one hold, the second waits for the first and then finds nothing.
   * `olderThanMs` (database clock) lets the reconciler claim only holds that are really orphaned.
   */
  async take(
    tx: Tx,
    jobId: string,
    olderThanMs?: number,
  ): Promise<{ userId: string; amount: number; purchased: number } | null> {
    const rows =
      olderThanMs === undefined
        ? await tx.$queryRaw<{ user_id: string; amount: number; purchased: number }[]>`
            DELETE FROM credit_holds WHERE job_id = ${jobId} RETURNING user_id, amount, purchased`
        : await tx.$queryRaw<{ user_id: string; amount: number; purchased: number }[]>`
            DELETE FROM credit_holds
            WHERE job_id = ${jobId} AND created_at < now() - ${olderThanMs}::int * interval '1 millisecond'
            RETURNING user_id, amount, purchased`;
    return rows.length === 0
      ? null
      : { userId: rows[0].user_id, amount: rows[0].amount, purchased: rows[0].purchased };
  }

  /** Oldest holds past the age limit (index on created_at; the table holds only open reservations). */
  async orphans(db: Db, olderThanMs: number, limit: number): Promise<string[]> {
    const rows = await db.$queryRaw<{ job_id: string }[]>`
      SELECT job_id FROM credit_holds
      WHERE created_at < now() - ${olderThanMs}::int * interval '1 millisecond'
      ORDER BY created_at LIMIT ${limit}::int`;
    return rows.map((row) => row.job_id);
  }
}
