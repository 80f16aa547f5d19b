import { Injectable } from '@nestjs/common';
import type { Db } from '../../../infra/prisma/prisma.service.js';

/** A run's hold on its sync: the checkpoint it starts after, and its lease (the token of the later calls). */
export interface SyncLease {
  checkpoint: string | null;
  leaseUntil: Date;
}

/**
 * Where a periodic provider sync stopped (sync_checkpoints); the billing backfill is its one user today.
 * A run holds the row's lease from `claim` to `finished` (or `release`): `lease_until`, set from the
 * database's clock. A claim's lease ends later than any earlier one, so its value names the run holding it:
 * every later write is conditional on it, and a run whose lease another one took writes nothing.
 */
@Injectable()
export class SyncCheckpointsRepository {
  find(db: Db, name: string) {
    return db.syncCheckpoint.findUnique({ where: { name } });
  }

  /**
   * Claims the sync for one run, atomically: only when no live lease holds it and, unless `dueBefore` is
   * null (a forced run), its last finished run started at or before `dueBefore`. Null when another run
   * holds it or it is not due. The first claim creates the row.
   */
  async claim(db: Db, name: string, dueBefore: Date | null, leaseMs: number): Promise<SyncLease | null> {
    const rows = await db.$queryRaw<{ checkpoint: string | null; lease_until: Date }[]>`
      INSERT INTO sync_checkpoints (name, lease_until, updated_at)
      VALUES (${name}, now() + ${leaseMs}::int * interval '1 millisecond', now())
      ON CONFLICT (name) DO UPDATE SET lease_until = EXCLUDED.lease_until, updated_at = now()
      WHERE (sync_checkpoints.lease_until IS NULL OR sync_checkpoints.lease_until <= now())
        AND (${dueBefore}::timestamptz IS NULL OR sync_checkpoints.last_run_at IS NULL
             OR sync_checkpoints.last_run_at <= ${dueBefore}::timestamptz)
      RETURNING checkpoint, lease_until`;
    return rows[0] ? { checkpoint: rows[0].checkpoint, leaseUntil: rows[0].lease_until } : null;
  }

  /**
   * After each page the run got through: moves the checkpoint forward (null keeps it) and renews the
   * lease. The new lease, or null when the run no longer holds the sync (its lease expired and another
   * run took it): the caller stops.
   */
  async advance(
    db: Db,
    name: string,
    lease: Date,
    checkpoint: string | null,
    leaseMs: number,
  ): Promise<Date | null> {
    const rows = await db.$queryRaw<{ lease_until: Date }[]>`
      UPDATE sync_checkpoints
      SET checkpoint = COALESCE(${checkpoint}, checkpoint),
          lease_until = now() + ${leaseMs}::int * interval '1 millisecond', updated_at = now()
      WHERE name = ${name} AND lease_until = ${lease}::timestamptz
      RETURNING lease_until`;
    return rows[0]?.lease_until ?? null;
  }

  /** A finished run: when it started, how many events it accepted; its lease ends. False: not held. */
  async finished(db: Db, name: string, lease: Date, at: Date, processed: number): Promise<boolean> {
    const updated = await db.$executeRaw`
      UPDATE sync_checkpoints
      SET last_run_at = ${at}::timestamptz, last_run_processed = ${processed}, lease_until = NULL,
          updated_at = now()
      WHERE name = ${name} AND lease_until = ${lease}::timestamptz`;
    return updated === 1;
  }

  /** A failed run gives the sync up (the next tick may retry); last_run_at stays the last finished run's. */
  async release(db: Db, name: string, lease: Date): Promise<void> {
    await db.$executeRaw`
      UPDATE sync_checkpoints SET lease_until = NULL, updated_at = now()
      WHERE name = ${name} AND lease_until = ${lease}::timestamptz`;
  }
}
