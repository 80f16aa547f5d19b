import { Injectable } from '@nestjs/common';
import { PrismaService, type Db } from '../../infra/prisma/prisma.service.js';
import type { BroadcastRun, Prisma } from '../../generated/prisma/client.js';
import { type Audience, audienceConditions, SqlParams } from './audience.js';

/** A recipient's final status; `pending` rows (reserved, outcome not recorded yet) are counted apart. */
export type RecipientStatus = 'sent' | 'failed' | 'skipped';

export interface RecipientCounts {
  sent: number;
  failed: number;
  skipped: number;
}

/** What the dispatcher needs of an audience member (not the whole user row). */
export interface AudienceMember {
  id: string;
  identityUserId: string;
  email: string;
  locale: string;
  marketingConsentGiven: boolean;
  emailDisposable: boolean;
  deletedAt: Date | null;
}

/**
 * One recipient's final outcome. `recipientId` names the pending row it settles; without it a new row is
 * inserted (skipped recipients).
 */
export interface RecipientOutcome {
  recipientId?: string;
  /** null only for a pending row whose user has since been erased. */
  userId: string | null;
  status: RecipientStatus;
  /** Skip reason or failure message. */
  error: string | null;
  providerMessageId: string | null;
}

/** What one write of outcomes changed: counters added and pending rows reserved. */
export interface OutcomesWritten extends RecipientCounts {
  reserved: { recipientId: string; userId: string }[];
}

/**
 * Parts other repositories add to the statement (data-modifying CTE bodies: the e-mail log rows and audit
 * entries of the outcomes), given the statement's parameters and the name of the CTE listing the 1-based
 * positions (`ord`) of the outcomes this statement recorded.
 */
export type StatementParts = (params: SqlParams, changed: string) => string[];

/** A pending recipient row and its user (null when the user has been erased since). */
export interface PendingRecipient {
  recipientId: string;
  user: AudienceMember | null;
}

/** Pending rows that go out together: one batch request (its key), or one by one (`batchKey` null). */
export interface PendingGroup {
  batchKey: string | null;
  members: PendingRecipient[];
}

const MEMBER_COLUMNS = `u.id, u.identity_user_id AS "identityUserId", u.email, u.locale,
              u.marketing_consent_given AS "marketingConsentGiven", u.email_disposable AS "emailDisposable",
              u.deleted_at AS "deletedAt"`;

/**
 * Broadcast runs, their audience and recipient rows. The per-page read and write of a running broadcast
 * are plain SQL on the pool: measured on this stack, Prisma's relation filter and interactive transaction
 * cost 5-7 times the time of the same work in SQL, and a run writes three rows per recipient (the other
 * two, the e-mail log row and its audit entry, are parts of the same statement written by their owners:
 * BroadcastRecorder).
 */
@Injectable()
export class BroadcastsRepository {
  constructor(private readonly prisma: PrismaService) {}

  create(db: Db, data: Prisma.BroadcastRunUncheckedCreateInput): Promise<BroadcastRun> {
    return db.broadcastRun.create({ data });
  }

  /** Runs not yet ended (`queued` or `running`), oldest first: what the sweep checks for a live job. */
  openRuns(db: Db): Promise<Pick<BroadcastRun, 'id' | 'createdAt'>[]> {
    return db.broadcastRun.findMany({
      where: { status: { in: ['queued', 'running'] } },
      select: { id: true, createdAt: true },
      orderBy: { createdAt: 'asc' },
    });
  }

  findById(db: Db, id: string): Promise<BroadcastRun | null> {
    return db.broadcastRun.findUnique({ where: { id } });
  }

  /** The run `createdBy` created with this Idempotency-Key, if any. */
  findByIdempotencyKey(db: Db, createdBy: string, idempotencyKey: string): Promise<BroadcastRun | null> {
    return db.broadcastRun.findUnique({
      where: { createdBy_idempotencyKey: { createdBy, idempotencyKey } },
    });
  }

  async list(db: Db, skip: number, take: number): Promise<{ items: BroadcastRun[]; total: number }> {
    const [items, total] = await Promise.all([
      db.broadcastRun.findMany({ orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], skip, take }),
      db.broadcastRun.count(),
    ]);
    return { items, total };
  }

  async countAudience(audience: Audience): Promise<number> {
    const params = new SqlParams();
    const where = audienceConditions(audience, params).join(' AND ');
    const { rows } = await this.prisma.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM users u WHERE ${where}`,
      params.values,
    );
    return Number(rows[0].n);
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
   * The next audience members after `afterId` (keyset on users.id) without a recipient row for this run
   * (pending rows included): a resumed run skips everyone already recorded or reserved, and memory stays
   * one page.
   */
  async nextRecipients(
    runId: string,
    audience: Audience,
    afterId: string | null,
    take: number,
  ): Promise<AudienceMember[]> {
    const params = new SqlParams();
    const conditions = audienceConditions(audience, params);
    if (afterId) conditions.push(`u.id > ${params.add(afterId)}::uuid`);
    conditions.push(
      `NOT EXISTS (SELECT 1 FROM broadcast_recipients r WHERE r.run_id = ${params.add(runId)}::uuid AND r.user_id = u.id)`,
    );
    const { rows } = await this.prisma.pool.query<AudienceMember>(
      `SELECT ${MEMBER_COLUMNS}
       FROM users u WHERE ${conditions.join(' AND ')} ORDER BY u.id LIMIT ${params.add(take)}`,
      params.values,
    );
    return rows;
  }

  /**
   * The provider refused a batch outright (nothing of it was delivered): its recipients lose the batch
   * key and go out one by one, each under its own key, now and on any resume.
   */
  async splitBatch(runId: string, batchKey: string): Promise<void> {
    await this.prisma.pool.query(
      `UPDATE broadcast_recipients SET batch_key = NULL
       WHERE run_id = $1::uuid AND status = 'pending' AND batch_key = $2`,
      [runId, batchKey],
    );
  }

  /**
   * The next group of pending recipients of a run (batches first, then the ones sent alone), at most
   * `take` of them, in users.id order: the order the page had, so a resent batch has the same body.
   */
  async nextPendingGroup(runId: string, take: number): Promise<PendingGroup | null> {
    const head = await this.prisma.pool.query<{ batch_key: string | null }>(
      `SELECT batch_key FROM broadcast_recipients
       WHERE run_id = $1::uuid AND status = 'pending' ORDER BY batch_key NULLS LAST LIMIT 1`,
      [runId],
    );
    if (head.rows.length === 0) return null;
    const batchKey = head.rows[0].batch_key;
    const { rows } = await this.prisma.pool.query<
      { recipientId: string } & { [K in keyof AudienceMember]: AudienceMember[K] | null }
    >(
      `SELECT r.id AS "recipientId", ${MEMBER_COLUMNS}
       FROM broadcast_recipients r LEFT JOIN users u ON u.id = r.user_id
       WHERE r.run_id = $1::uuid AND r.status = 'pending'
         AND ${batchKey === null ? 'r.batch_key IS NULL' : 'r.batch_key = $3'}
       ORDER BY r.user_id NULLS LAST LIMIT $2`,
      batchKey === null ? [runId, take] : [runId, take, batchKey],
    );
    return {
      batchKey,
      members: rows.map(({ recipientId, ...user }) => ({
        recipientId,
        user: user.id === null ? null : (user as AudienceMember),
      })),
    };
  }

  /**
   * A page's record in one statement: `rows` with a recipientId settle that pending row, only if it is
   * still pending (a concurrent delivery settling the same batch cannot count it twice); rows without one
   * insert a new row (ON CONFLICT DO NOTHING). Then, only for the rows this statement changed (CTE
   * `changed`), the `parts` of other owners (the e-mail log rows and audit entries), and the run's
   * counters; `reserve` also inserts pending rows under a batch key. One statement, one round trip, atomic
   * as a whole. Plain SQL: see the class comment.
   */
  async writeOutcomes(
    runId: string,
    rows: RecipientOutcome[],
    reserve: { userIds: string[]; batchKey: string | null } = { userIds: [], batchKey: null },
    parts?: StatementParts,
  ): Promise<OutcomesWritten> {
    const params = new SqlParams();
    const run = params.add(runId);
    const col = <K extends keyof RecipientOutcome>(key: K) => params.add(rows.map((row) => row[key] ?? null));
    const page = `unnest(${col('userId')}::uuid[], ${col('status')}::text[], ${col('error')}::text[],
                        ${col('providerMessageId')}::text[], ${col('recipientId')}::uuid[])`;
    const members = params.add(reserve.userIds);
    const batchKey = params.add(reserve.batchKey);
    const more = (parts?.(params, 'changed') ?? []).map((sql, i) => `, part_${i} AS (${sql})`).join('');
    const { rows: result } = await this.prisma.pool.query<{
      sent: string;
      failed: string;
      skipped: string;
      reserved: { recipientId: string; userId: string }[];
    }>(
      `WITH page AS (
         SELECT * FROM ${page} WITH ORDINALITY AS p(user_id, status, error, provider_message_id, recipient_id, ord)
       ), added AS (
         INSERT INTO broadcast_recipients (id, run_id, user_id, status, error, provider_message_id)
         SELECT gen_random_uuid(), ${run}::uuid, user_id, status::"BroadcastRecipientStatus", error, provider_message_id
         FROM page WHERE recipient_id IS NULL
         ON CONFLICT (run_id, user_id) DO NOTHING
         RETURNING user_id
       ), settled AS (
         UPDATE broadcast_recipients r
         SET status = page.status::"BroadcastRecipientStatus", error = page.error,
             provider_message_id = page.provider_message_id
         FROM page
         WHERE page.recipient_id IS NOT NULL AND r.id = page.recipient_id AND r.run_id = ${run}::uuid
           AND r.status = 'pending'
         RETURNING r.id
       ), changed AS (
         SELECT page.* FROM page JOIN added ON page.recipient_id IS NULL AND page.user_id = added.user_id
         UNION ALL
         SELECT page.* FROM page JOIN settled ON page.recipient_id = settled.id
       )${more}, reserved AS (
         INSERT INTO broadcast_recipients (id, run_id, user_id, status, batch_key)
         SELECT gen_random_uuid(), ${run}::uuid, member, 'pending', ${batchKey} FROM unnest(${members}::uuid[]) AS member
         ON CONFLICT (run_id, user_id) DO NOTHING
         RETURNING id, user_id
       ), counts AS (
         SELECT count(*) FILTER (WHERE status = 'sent') AS sent,
                count(*) FILTER (WHERE status = 'failed') AS failed,
                count(*) FILTER (WHERE status = 'skipped') AS skipped
         FROM changed
       ), run AS (
         UPDATE broadcast_runs b
         SET sent_count = b.sent_count + c.sent, failed_count = b.failed_count + c.failed,
             skipped_count = b.skipped_count + c.skipped, updated_at = now()
         FROM counts c WHERE b.id = ${run}::uuid
       )
       SELECT c.sent, c.failed, c.skipped,
              (SELECT coalesce(json_agg(json_build_object('recipientId', id, 'userId', user_id)), '[]'::json)
               FROM reserved) AS reserved
       FROM counts c`,
      params.values,
    );
    const out = result[0];
    return {
      sent: Number(out.sent),
      failed: Number(out.failed),
      skipped: Number(out.skipped),
      reserved: out.reserved,
    };
  }

  /** Authoritative counts from the recipient rows; `pending` (reserved, not settled) is none of the three. */
  async countRecipients(db: Db, runId: string): Promise<RecipientCounts & { pending: number }> {
    const groups = await db.broadcastRecipient.groupBy({
      by: ['status'],
      where: { runId },
      _count: { _all: true },
    });
    const counts = { sent: 0, failed: 0, skipped: 0, pending: 0 };
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
