import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { BroadcastRun, Prisma, User } from '../../generated/prisma/client.js';

export interface RecipientRow {
  userId: string;
  status: 'sent' | 'failed' | 'skipped';
  error: string | null;
  providerMessageId: string | null;
}

export interface RecipientCounts {
  sent: number;
  failed: number;
  skipped: number;
}

@Injectable()
export class BroadcastsRepository {
  create(db: Db, data: Prisma.BroadcastRunUncheckedCreateInput): Promise<BroadcastRun> {
    return db.broadcastRun.create({ data });
  }

  findById(db: Db, id: string): Promise<BroadcastRun | null> {
    return db.broadcastRun.findUnique({ where: { id } });
  }

  async list(db: Db, skip: number, take: number): Promise<{ items: BroadcastRun[]; total: number }> {
    const [items, total] = await Promise.all([
      db.broadcastRun.findMany({ orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], skip, take }),
      db.broadcastRun.count(),
    ]);
    return { items, total };
  }

  countAudience(db: Db, where: Prisma.UserWhereInput): Promise<number> {
    return db.user.count({ where });
  }

  /** queued -> running; false when another delivery of the job got there first (or the run ended). */
  async markRunning(db: Db, id: string, recipientsTotal: number): Promise<boolean> {
    const { count } = await db.broadcastRun.updateMany({
      where: { id, status: 'queued' },
      data: { status: 'running', startedAt: new Date(), recipientsTotal },
    });
    return count === 1;
  }

  /**
   * The next audience members after `afterId` (keyset on users.id) that have no recipient row for this
   * run yet: a resumed run skips everyone already recorded, and memory stays one page.
   */
  nextRecipients(
    db: Db,
    runId: string,
    where: Prisma.UserWhereInput,
    afterId: string | null,
    take: number,
  ): Promise<User[]> {
    return db.user.findMany({
      where: {
        AND: [
          where,
          ...(afterId ? [{ id: { gt: afterId } }] : []),
          { broadcastRecipients: { none: { runId } } },
        ],
      },
      orderBy: { id: 'asc' },
      take,
    });
  }

  /** One statement per page (array parameters; Prisma's createMany costs about ten times the CPU). */
  async insertRecipients(db: Db, runId: string, rows: RecipientRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    const col = <K extends keyof RecipientRow>(key: K) => rows.map((row) => row[key]);
    return db.$executeRaw`
      INSERT INTO broadcast_recipients (id, run_id, user_id, status, error, provider_message_id)
      SELECT gen_random_uuid(), ${runId}::uuid, u, s::"BroadcastRecipientStatus", e, p
      FROM unnest(${col('userId')}::uuid[], ${col('status')}::text[], ${col('error')}::text[], ${col('providerMessageId')}::text[])
        AS t(u, s, e, p)
      ON CONFLICT (run_id, user_id) DO NOTHING`;
  }

  async addCounts(db: Db, id: string, counts: RecipientCounts): Promise<void> {
    await db.broadcastRun.update({
      where: { id },
      data: {
        sentCount: { increment: counts.sent },
        failedCount: { increment: counts.failed },
        skippedCount: { increment: counts.skipped },
      },
    });
  }

  /** Authoritative counts from the recipient rows (the running counters are progress only). */
  async countRecipients(db: Db, runId: string): Promise<RecipientCounts> {
    const groups = await db.broadcastRecipient.groupBy({
      by: ['status'],
      where: { runId },
      _count: { _all: true },
    });
    const counts: RecipientCounts = { sent: 0, failed: 0, skipped: 0 };
    for (const group of groups) counts[group.status] = group._count._all;
    return counts;
  }

  /**
   * Ends a run that is still queued or running; false when it had ended already (nothing written). A
   * completed run's recipient total becomes what was processed; a failed one keeps the audience size.
   */
  async finish(
    db: Db,
    id: string,
    status: 'done' | 'failed',
    counts: RecipientCounts,
    error: string | null,
  ): Promise<boolean> {
    const total = counts.sent + counts.failed + counts.skipped;
    const { count } = await db.broadcastRun.updateMany({
      where: { id, status: { in: ['queued', 'running'] } },
      data: {
        status,
        error,
        finishedAt: new Date(),
        sentCount: counts.sent,
        failedCount: counts.failed,
        skippedCount: counts.skipped,
        ...(status === 'done' ? { recipientsTotal: total } : {}),
      },
    });
    return count === 1;
  }
}
