import { Injectable } from '@nestjs/common';
import { type Db, driverOf, PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import type { Prisma, WebhookEvent } from '../../generated/prisma/client.js';

export type WebhookProvider = 'identity' | 'billing' | 'email';

export interface InboundEvent {
  eventId: string;
  eventType: string;
  occurredAt?: Date | null;
  /** The parsed raw payload (or, for identity, its allowlist), archived as received. */
  payload: Prisma.InputJsonValue;
  /** How it reached us: the provider's webhook (default) or the backfill from its event log. */
  source?: 'delivery' | 'backfill';
}

/** One delivery to archive at intake. */
export interface AcceptedInput {
  provider: WebhookProvider;
  event: InboundEvent;
}

/**
 * An archive row waiting for the worker. `batch` is the id of the intake group that accepted it (its job's
 * name, see batchJobIdOf), null for a row reopened by a replay; a job of the row alone derives its id from
 * id and receivedAt (jobIdOf).
 */
export interface AcceptedRow {
  id: string;
  provider: string;
  receivedAt: Date;
  batch: string | null;
}

/** An accepted event as the worker reads it back. */
export type StoredEvent = Pick<
  WebhookEvent,
  'id' | 'provider' | 'eventId' | 'eventType' | 'occurredAt' | 'payload' | 'attempts' | 'source'
>;

/**
 * The inbox's tables: processed_webhook_events (the claim: an event id is accepted once) and webhook_events
 * (the archive, and the worker's to-do list while a row is RECEIVED).
 */
/** Reason under which an event for a not-yet-known subscription is parked (archived SKIPPED). */
export const PARKED_REASON = 'unknown_subscription';

/**
 * Reason under which the worker archives SKIPPED an event whose payload the erasure scrub redacted while it
 * was still RECEIVED (see isRedactedPayload): it was about the erased user, there is nothing left to apply.
 */
export const ERASED_REASON = 'erased';

/**
 * Whether an archived payload is the erasure scrub's redaction (`{"redacted": true, "type": ...}`, and for
 * an identity `user.deleted` also `"data": {"id": ...}`; written by scrubIdentityArchive and
 * SCRUB_EMAIL_ARCHIVE_SQL, this file being their one writer), not a provider's payload: none of the
 * archived shapes (the identity allowlist, Paddle's and Resend's raw envelopes) is an object of
 * `redacted: true` with nothing more than those members.
 */
export function isRedactedPayload(payload: Prisma.JsonValue): boolean {
  if (!isJsonObject(payload) || payload.redacted !== true) return false;
  const { redacted: _redacted, type: _type, data, ...rest } = payload;
  if (Object.keys(rest).length > 0) return false;
  return data === undefined || (isJsonObject(data) && Object.keys(data).every((key) => key === 'id'));
}

const isJsonObject = (value: Prisma.JsonValue | undefined): value is Prisma.JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const PRUNE_BATCH = 5000;

/** The worker's statements, on the driver (issue 15 item 3): see lockReceivedMany, markSkipped, markProcessedMany. */
const LOCK_RECEIVED_SQL = `
  SELECT id, provider, event_id, event_type, occurred_at, payload, attempts, source FROM webhook_events
  WHERE id = ANY($1::uuid[]) AND status = 'RECEIVED'
  ORDER BY id
  FOR UPDATE`;
const MARK_PROCESSED_MANY_SQL = `
  UPDATE webhook_events
  SET status = 'PROCESSED'::"WebhookEventStatus", error = NULL, attempts = attempts + 1, processed_at = now()
  WHERE id = ANY($1::uuid[])`;
const MARK_SKIPPED_SQL = `
  UPDATE webhook_events
  SET status = 'SKIPPED'::"WebhookEventStatus", error = $2, attempts = attempts + 1, processed_at = now()
  WHERE id = $1::uuid`;
const PARKED_WINDOW_MS = 30 * 86_400_000;

/**
 * Hours after each failure of an event (the first, then after each automatic re-apply) before it is
 * re-applied automatically: 7 re-applies, the last about 5 days and 7 hours after the first failure
 * (WebhookInboxService.reapplyDue). Each runs the worker's whole retry chain (WEBHOOK_PROCESS_ATTEMPTS).
 */
export const REAPPLY_DELAYS_HOURS = [1, 2, 4, 8, 16, 32, 64] as const;

/** A FAILED row the automatic re-apply reopened (WebhookInboxRepository.reopenDue). */
export interface ReappliedRow extends AcceptedRow {
  eventId: string;
  eventType: string;
  /** Which automatic re-apply this is (1 for the first). */
  reapply: number;
}

@Injectable()
export class WebhookInboxRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Intake in ONE statement for a batch of deliveries (see WebhookInboxService: concurrent deliveries share
   * a statement): claims each event id and archives its payload as RECEIVED. Answers, per event and in
   * order, the archive row, or null for a duplicate (the id was claimed before). A row left FAILED by an
   * earlier attempt whose claim was released (see markFailed, or a payload refused at intake) is reset to
   * RECEIVED: the provider's redelivery is processed again. The events of one batch have distinct
   * (provider, event id) pairs. The rows are stamped with `group`, the id of the job that will apply them
   * (WebhookInboxService.joinGroup). Runs on the driver: this is the hottest statement of the service.
   */
  async intake(events: readonly AcceptedInput[], group: string): Promise<(AcceptedRow | null)[]> {
    const { rows } = await this.prisma.pool.query<WaitingRow & { event_id: string }>(INTAKE_SQL, [
      intakeDocument(events),
      group,
    ]);
    const byKey = new Map(rows.map((row) => [`${row.provider}\u0000${row.event_id}`, row]));
    return events.map(({ provider, event }) => {
      const row = byKey.get(`${provider}\u0000${event.eventId}`);
      return row ? acceptedRowOf(row) : null;
    });
  }

  /**
   * The RECEIVED rows among `ids`, locked for the worker's transaction in one statement (in id order, so
   * two batches lock shared rows in the same order). A row no longer RECEIVED (applied by another job, or
   * failed for good) is absent from the answer.
   */
  async lockReceivedMany(tx: Tx, ids: readonly string[]): Promise<Map<string, StoredEvent>> {
    const { rows } = await driverOf(tx).query<{
      id: string;
      provider: string;
      event_id: string;
      event_type: string;
      occurred_at: Date | null;
      payload: Prisma.JsonValue;
      attempts: number;
      source: string;
    }>(LOCK_RECEIVED_SQL, [ids]);
    return new Map(
      rows.map((row) => [
        row.id,
        {
          id: row.id,
          provider: row.provider,
          eventId: row.event_id,
          eventType: row.event_type,
          occurredAt: row.occurred_at,
          payload: row.payload,
          attempts: row.attempts,
          source: row.source,
        },
      ]),
    );
  }

  /**
   * SKIPPED with its reason, in the transaction that applied the event. Written right after the handler,
   * not once per batch: a later event of the same batch may look for it (a parked event is found by its
   * SKIPPED row and replayed).
   */
  async markSkipped(tx: Tx, id: string, reason: string): Promise<void> {
    await driverOf(tx).query(MARK_SKIPPED_SQL, [id, reason]);
  }

  /** PROCESSED for the events of a batch, in one statement at the end of the transaction that applied them. */
  async markProcessedMany(tx: Tx, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await driverOf(tx).query(MARK_PROCESSED_MANY_SQL, [ids]);
  }

  /** A failed attempt that will be retried: counted, its error kept, still RECEIVED. */
  async recordAttempt(db: Db, id: string, error: string): Promise<void> {
    await db.$executeRaw`
      UPDATE webhook_events SET attempts = attempts + 1, error = ${error}
      WHERE id = ${id}::uuid AND status = 'RECEIVED'`;
  }

  /**
   * The last attempt failed (or the payload can never succeed): FAILED, and the claim is released so the
   * provider's redelivery, or an operator's replay, is accepted again. A processing failure (`reapply`;
   * false for a payload that can never succeed) gets its next automatic re-apply time (`retryAt`,
   * REAPPLY_DELAYS_HOURS after now) while re-applies are left, whatever the provider. Null when the row was
   * no longer RECEIVED (another job handled it).
   */
  async markFailed(
    tx: Tx,
    id: string,
    error: string,
    reapply = false,
  ): Promise<(StoredEvent & { retryAt: Date | null; autoReapplies: number }) | null> {
    const delays = [...REAPPLY_DELAYS_HOURS];
    const rows = await tx.$queryRaw<
      {
        provider: string;
        event_id: string;
        event_type: string;
        retry_at: Date | null;
        auto_reapplies: number;
      }[]
    >`
      UPDATE webhook_events
      SET status = 'FAILED'::"WebhookEventStatus", error = ${error}, attempts = attempts + 1, processed_at = NULL,
          retry_at = CASE WHEN ${reapply}::boolean AND auto_reapplies < ${delays.length}
            THEN now() + make_interval(hours => (${delays}::int[])[auto_reapplies + 1]) END
      WHERE id = ${id}::uuid AND status = 'RECEIVED'
      RETURNING provider, event_id, event_type, retry_at, auto_reapplies`;
    const row = rows[0];
    if (!row) return null;
    await tx.$executeRaw`
      DELETE FROM processed_webhook_events WHERE provider = ${row.provider} AND event_id = ${row.event_id}`;
    return {
      id,
      provider: row.provider,
      eventId: row.event_id,
      eventType: row.event_type,
      occurredAt: null,
      payload: null,
      attempts: 0,
      source: 'delivery',
      retryAt: row.retry_at,
      autoReapplies: row.auto_reapplies,
    };
  }

  /**
   * The automatic re-apply: FAILED rows whose `retry_at` has come (at `now`) become RECEIVED again with
   * their claim, as an operator's bulk replay reopens them (a new received_at, so a new job id), and count
   * the re-apply. Only FAILED rows: one the worker still holds (RECEIVED) is never reopened, so no second
   * retry chain starts beside it.
   *
   * The claims are taken first, then the rows: the intake's order (claim, then row), so a provider's
   * redelivery of the same event racing the re-apply waits for one side instead of deadlocking with it
   * (locking the row first and then the claim was the opposite order, 40P01). Only the rows whose claim
   * this statement took are reopened (one whose claim an intake or another replica holds is theirs), and
   * a claim taken for a row that is no longer due is given back.
   */
  async reopenDue(tx: Tx, now: Date, limit: number): Promise<ReappliedRow[]> {
    const claimed = await tx.$queryRaw<{ provider: string; event_id: string }[]>`
      INSERT INTO processed_webhook_events (provider, event_id, event_type)
      SELECT provider, event_id, event_type FROM (
        SELECT provider, event_id, event_type FROM webhook_events
        WHERE status = 'FAILED'::"WebhookEventStatus" AND retry_at IS NOT NULL AND retry_at <= ${now}
        ORDER BY retry_at, provider, event_id
        LIMIT ${limit}
      ) due
      ORDER BY provider, event_id
      ON CONFLICT DO NOTHING
      RETURNING provider, event_id`;
    if (claimed.length === 0) return [];
    const providers = claimed.map((c) => c.provider);
    const eventIds = claimed.map((c) => c.event_id);
    const rows = await tx.$queryRaw<
      (WaitingRow & { event_id: string; event_type: string; auto_reapplies: number })[]
    >`
      UPDATE webhook_events w
      SET status = 'RECEIVED'::"WebhookEventStatus", processed_at = NULL, received_at = now(),
          intake_batch = NULL, retry_at = NULL, auto_reapplies = w.auto_reapplies + 1
      FROM unnest(${providers}::text[], ${eventIds}::text[]) AS c(provider, event_id)
      WHERE w.provider = c.provider AND w.event_id = c.event_id
        AND w.status = 'FAILED'::"WebhookEventStatus" AND w.retry_at IS NOT NULL AND w.retry_at <= ${now}
      RETURNING w.id, w.provider, w.event_id, w.event_type, w.received_at, NULL::text AS intake_batch,
        w.auto_reapplies`;
    await releaseClaims(tx, claimed, rows);
    return rows.map((row) => ({
      ...acceptedRowOf(row),
      eventId: row.event_id,
      eventType: row.event_type,
      reapply: row.auto_reapplies,
    }));
  }

  /** RECEIVED rows older than `olderThanMs`: the relay makes sure each has a job. */
  async stale(db: Db, olderThanMs: number, limit: number): Promise<AcceptedRow[]> {
    const rows = await db.$queryRaw<WaitingRow[]>`
      SELECT id, provider, received_at, intake_batch::text AS intake_batch FROM webhook_events
      WHERE status = 'RECEIVED' AND received_at < now() - make_interval(secs => ${olderThanMs / 1000})
      ORDER BY received_at
      LIMIT ${limit}`;
    return rows.map(acceptedRowOf);
  }

  /**
   * A verified payload refused at intake (it breaks the provider contract): archived FAILED without a
   * claim, so a corrected deployment still accepts the provider's retry. Never overwrites a row that is
   * RECEIVED, PROCESSED or SKIPPED. Returns false when nothing was written.
   */
  async archiveRefused(
    db: Db,
    provider: WebhookProvider,
    event: InboundEvent,
    error: string,
  ): Promise<boolean> {
    const written = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO webhook_events (id, provider, event_id, event_type, payload, status, error, occurred_at)
      SELECT gen_random_uuid(), ${provider}, ${event.eventId}, ${event.eventType},
             ${JSON.stringify(event.payload)}::jsonb, 'FAILED'::"WebhookEventStatus", ${error},
             ${event.occurredAt ?? null}::timestamptz
      WHERE NOT EXISTS (
        SELECT 1 FROM processed_webhook_events WHERE provider = ${provider} AND event_id = ${event.eventId})
      ON CONFLICT (provider, event_id) DO UPDATE
        SET status = 'FAILED'::"WebhookEventStatus", error = EXCLUDED.error,
            attempts = webhook_events.attempts + 1, processed_at = NULL, payload = EXCLUDED.payload,
            retry_at = NULL
        WHERE webhook_events.status = 'FAILED'
      RETURNING id`;
    return written.length > 0;
  }

  /** The admin list: newest first, filtered; `total` counts every match. */
  async list(db: Db, filter: ArchiveFilter, window: { skip: number; take: number }) {
    const where = whereOf(filter);
    const [rows, total] = await Promise.all([
      db.webhookEvent.findMany({
        where,
        orderBy: [{ receivedAt: 'desc' }, { id: 'desc' }],
        skip: window.skip,
        take: window.take,
        omit: { payload: true },
      }),
      db.webhookEvent.count({ where }),
    ]);
    return { rows, total };
  }

  find(db: Db, id: string): Promise<WebhookEvent | null> {
    return db.webhookEvent.findUnique({ where: { id } });
  }

  /**
   * A replay: a FAILED or SKIPPED row becomes RECEIVED again and its claim is (re)taken, in the caller's
   * transaction. The claim first, then the row's lock (the intake's order, see reopenDue): a FAILED row
   * whose claim a redelivery holds is the redelivery's (its intake reopens it). Returns the row's status
   * before ('RECEIVED' when a concurrent replay or redelivery got there first, null when there is no such
   * row).
   */
  async reopen(tx: Tx, id: string): Promise<string | null> {
    const found = await tx.$queryRaw<
      { status: string; provider: string; event_id: string; event_type: string }[]
    >`
      SELECT status::text AS status, provider, event_id, event_type FROM webhook_events WHERE id = ${id}::uuid`;
    const seen = found[0];
    if (!seen) return null;
    const reopenable = (status: string) => status === 'FAILED' || status === 'SKIPPED';
    // A SKIPPED row keeps its claim (the event was handled): nothing to take then.
    const claimed = reopenable(seen.status)
      ? await tx.$queryRaw<{ provider: string; event_id: string }[]>`
          INSERT INTO processed_webhook_events (provider, event_id, event_type)
          VALUES (${seen.provider}, ${seen.event_id}, ${seen.event_type})
          ON CONFLICT DO NOTHING
          RETURNING provider, event_id`
      : [];
    const rows = await tx.$queryRaw<{ status: string }[]>`
      SELECT status::text AS status FROM webhook_events WHERE id = ${id}::uuid FOR UPDATE`;
    const row = rows[0];
    const reopen = !!row && (row.status === 'SKIPPED' || (row.status === 'FAILED' && claimed.length > 0));
    if (reopen) {
      await tx.$executeRaw`
        UPDATE webhook_events
        SET status = 'RECEIVED'::"WebhookEventStatus", processed_at = NULL, intake_batch = NULL, retry_at = NULL
        WHERE id = ${id}::uuid`;
    } else {
      await releaseClaims(tx, claimed, []);
    }
    if (!row) return null;
    // A FAILED row whose claim someone else took is theirs: RECEIVED (or about to be) as a replay's would be.
    return row.status === 'FAILED' && !reopen ? 'RECEIVED' : row.status;
  }

  /**
   * Bulk replay: every FAILED (or SKIPPED) row of the filter becomes RECEIVED with its claim, in one
   * transaction: the claims first, then the rows (the intake's order, see reopenDue). A FAILED row whose
   * claim someone else holds (a redelivery being taken in) is left to them.
   */
  async reopenMany(
    prisma: PrismaService,
    filter: ArchiveFilter & { status: 'FAILED' | 'SKIPPED' },
  ): Promise<AcceptedRow[]> {
    const provider = filter.provider ?? null;
    const from = filter.from ?? null;
    const to = filter.to ?? null;
    return prisma.$transaction(async (tx) => {
      const claimed = await tx.$queryRaw<{ provider: string; event_id: string }[]>`
        INSERT INTO processed_webhook_events (provider, event_id, event_type)
        SELECT provider, event_id, event_type FROM webhook_events
        WHERE status = ${filter.status}::"WebhookEventStatus"
          AND (${provider}::text IS NULL OR provider = ${provider}::text)
          AND (${from}::timestamptz IS NULL OR received_at >= ${from}::timestamptz)
          AND (${to}::timestamptz IS NULL OR received_at <= ${to}::timestamptz)
        ORDER BY provider, event_id
        ON CONFLICT DO NOTHING
        RETURNING provider, event_id`;
      const providers = claimed.map((c) => c.provider);
      const eventIds = claimed.map((c) => c.event_id);
      const rows = await tx.$queryRaw<(WaitingRow & { event_id: string })[]>`
        UPDATE webhook_events w
        SET status = 'RECEIVED'::"WebhookEventStatus", processed_at = NULL, received_at = now(),
            intake_batch = NULL, retry_at = NULL
        WHERE w.status = ${filter.status}::"WebhookEventStatus"
          AND (${provider}::text IS NULL OR w.provider = ${provider}::text)
          AND (${from}::timestamptz IS NULL OR w.received_at >= ${from}::timestamptz)
          AND (${to}::timestamptz IS NULL OR w.received_at <= ${to}::timestamptz)
          AND (w.status = 'SKIPPED'::"WebhookEventStatus" OR (w.provider, w.event_id) IN (
            SELECT * FROM unnest(${providers}::text[], ${eventIds}::text[])))
        RETURNING w.id, w.provider, w.event_id, w.received_at, NULL::text AS intake_batch`;
      await releaseClaims(tx, claimed, rows);
      return rows.map(acceptedRowOf);
    });
  }

  /* The archive: parked events, retention and erasure (this file is the one writer of both webhook tables). */
  /**
   * Parked events of one subscription, oldest first: they arrived before any event that could tie the
   * subscription to a user, and are replayed once the subscription row exists.
   */
  parkedFor(
    tx: Tx,
    providerSubscriptionId: string,
    now: Date,
    kind: 'subscription.' | 'transaction.' = 'subscription.',
  ): Promise<WebhookEvent[]> {
    // A subscription's id is data.id; a transaction names its subscription in data.subscription_id.
    const path = kind === 'subscription.' ? ['data', 'id'] : ['data', 'subscription_id'];
    return tx.webhookEvent.findMany({
      where: {
        provider: 'billing',
        status: 'SKIPPED',
        // Bounded by the (status, received_at) index: the provider delivers a subscription's events
        // within days, so older parked rows cannot belong to a subscription created now.
        receivedAt: { gte: new Date(now.getTime() - PARKED_WINDOW_MS) },
        error: PARKED_REASON,
        eventType: { startsWith: kind },
        payload: { path, equals: providerSubscriptionId },
      },
      orderBy: [{ occurredAt: 'asc' }, { eventId: 'asc' }],
    });
  }

  async markReplayed(tx: Tx, id: string, at: Date): Promise<void> {
    await tx.webhookEvent.update({
      where: { id },
      data: { status: 'PROCESSED', error: null, processedAt: at },
    });
  }

  /**
   * Deletes archive rows received before `before`, in batches so one run never holds a huge lock. A row
   * still RECEIVED is kept whatever its age: it is the worker's to-do list, not only the archive, and its
   * claim outlives it (PROCESSED_WEBHOOK_RETENTION_DAYS), so deleting it would answer the provider's
   * redeliveries as duplicates of an event never applied. The relay keeps pushing it and the operators
   * see it until it is applied or fails.
   */
  async pruneArchive(db: Db, before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await db.$executeRaw`
        DELETE FROM webhook_events WHERE id IN (
          SELECT id FROM webhook_events
          WHERE received_at < ${before} AND status <> 'RECEIVED'::"WebhookEventStatus"
          LIMIT ${PRUNE_BATCH})`;
      total += deleted;
      if (deleted < PRUNE_BATCH) return total;
    }
  }

  /** Deletes dedupe records older than `before` (a replay older than that is no longer recognised). */
  async pruneProcessed(db: Db, before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await db.$executeRaw`
        DELETE FROM processed_webhook_events WHERE (provider, event_id) IN (
          SELECT provider, event_id FROM processed_webhook_events WHERE processed_at < ${before}
          LIMIT ${PRUNE_BATCH})`;
      total += deleted;
      if (deleted < PRUNE_BATCH) return total;
    }
  }

  /**
   * The identity webhook archive has no user foreign key but holds the user's e-mail addresses in its
   * archived payloads (archivableIdentityPayload keeps them): keep the rows (dedupe history) and replace
   * their payloads. Called when the user is erased. Rows still RECEIVED are scrubbed too: the identity id is
   * the erased person's alone (unlike an address), and the worker archives a redacted row SKIPPED
   * (ERASED_REASON), never FAILED.
   */
  async scrubIdentityArchive(tx: Tx, identityUserId: string): Promise<number> {
    // A user.deleted row keeps the identity id (nothing else): it is what stops an older user.created
    // delivered late, or a token issued before the deletion, from re-creating the erased account
    // (latestIdentityDeletion), until retention ends.
    return tx.$executeRaw`
      UPDATE webhook_events
      SET payload = CASE WHEN event_type = 'user.deleted'
        THEN jsonb_build_object('redacted', true, 'type', payload->>'type',
                                'data', jsonb_build_object('id', payload->'data'->>'id'))
        ELSE jsonb_build_object('redacted', true, 'type', payload->>'type') END
      WHERE provider = 'identity' AND payload->'data'->>'id' = ${identityUserId}`;
  }

  /**
   * When the identity provider last deleted this identity user, as far as the archive knows: the newest
   * event time of its archived `user.deleted` events (applied, skipped or still waiting, also one that failed
   * processing: it waits for its automatic re-apply (`retry_at`) or has had them (`auto_reapplies`), and the
   * provider deleted the user all the same; not a refused payload, FAILED with neither), null when there is
   * none within the archive's retention. Found through the partial index on the identity rows' `data.id`
   * (webhook_events_identity_user_idx).
   */
  async latestIdentityDeletion(tx: Tx, identityUserId: string): Promise<Date | null> {
    const rows = await tx.$queryRaw<{ at: Date | null }[]>`
      SELECT max(occurred_at) AS at FROM webhook_events
      WHERE provider = 'identity' AND payload->'data'->>'id' = ${identityUserId}
        AND event_type = 'user.deleted'
        AND (status <> 'FAILED'::"WebhookEventStatus" OR retry_at IS NOT NULL OR auto_reapplies > 0)`;
    return rows[0]?.at ?? null;
  }

  /**
   * When the user is erased, every e-mail archive row about one of the user's messages (`data.email_id`, the
   * provider message id) or sent to one of the user's addresses (`data.to`; the only link of a message whose
   * provider id we never learnt) keeps its row (dedupe history, status, type, times) and loses its payload,
   * as the identity rows do. A row still to be applied (RECEIVED, or FAILED with an automatic re-apply to
   * come) is scrubbed only when one of the user's message ids matches it (it is then the user's own; the
   * worker archives it SKIPPED, ERASED_REASON): matched by an address alone, it may be another account's
   * event at an address the erased user once had (a bounce or complaint that must still suppress it), so it
   * is left for the worker.
   * Addresses are compared trimmed and lower-cased (the archive holds Resend's raw events, whose recipients
   * keep the case they were sent with), through the keys index (SCRUB_EMAIL_ARCHIVE_SQL), not a scan of
   * every e-mail row. The caller collects the ids and addresses before the delete cascades the user's
   * messages.
   */
  async scrubEmailArchive(tx: Tx, trail: { messageIds: string[]; addresses: string[] }): Promise<number> {
    if (trail.messageIds.length === 0 && trail.addresses.length === 0) return 0;
    const { rowCount } = await driverOf(tx).query(SCRUB_EMAIL_ARCHIVE_SQL, [
      trail.messageIds,
      trail.addresses,
    ]);
    return rowCount ?? 0;
  }

  /**
   * When the user is erased, every billing archive row about one of the user's provider customers keeps its
   * row (dedupe history, status, type, times) and loses its payload, as the identity and e-mail rows do:
   * Paddle's raw events hold personal data (a customer.* event the e-mail address and name, a transaction the
   * cardholder's name) that used to outlive the erasure for the archive's 90 days. The key is the customer id
   * (billing_archive_customer, through webhook_events_billing_customer_idx); the caller passes only customer
   * ids no other account holds. Only rows no longer waiting to be applied are scrubbed: not RECEIVED, not
   * FAILED with an automatic re-apply to come (`retry_at`), not parked (SKIPPED PARKED_REASON within
   * PARKED_WINDOW_MS of `now`, which the subscription's created re-applies, parkedFor). Paddle reuses a
   * customer for the same address, so such a row may be another account's payment (the erased person signed
   * up again, a subscription or one-time purchase not applied yet; payments store no customer id, and no
   * account holds the customer until the event is applied): redacted, the worker would archive it SKIPPED
   * (ERASED_REASON) and the payment would grant nothing. Those rows keep their payload until they are
   * applied or retention prunes them, as the e-mail rows matched by an address alone do.
   */
  async scrubBillingArchive(tx: Tx, customerIds: string[], now: Date): Promise<number> {
    if (customerIds.length === 0) return 0;
    const { rowCount } = await driverOf(tx).query(SCRUB_BILLING_ARCHIVE_SQL, [
      customerIds,
      PARKED_REASON,
      new Date(now.getTime() - PARKED_WINDOW_MS),
    ]);
    return rowCount ?? 0;
  }
}

/**
 * The e-mail archive scrub, through the partial GIN index webhook_events_email_keys_idx on
 * email_archive_keys(payload) (migration 20261207092000_email_archive_erasure_keys): the function gives a
 * raw event's keys, `id:<email_id>` and `to:<recipient, trimmed and lower-cased>`, and also computes the
 * keys of the erased user's addresses, so both sides are normalized by one definition. Two overlap probes of
 * the index, OR-ed into one bitmap: the message ids in every status, the addresses only on rows no longer
 * waiting to be applied (`own`, see scrubEmailArchive): neither RECEIVED nor FAILED with an automatic
 * re-apply to come (`retry_at`, set only on FAILED rows). The status is re-checked on a row the worker
 * held, so a row it applied meanwhile is scrubbed as PROCESSED. Exported for the plan check in
 * test/users/account-deletion.e2e-spec.ts.
 */
export const SCRUB_EMAIL_ARCHIVE_SQL = `
  UPDATE webhook_events w
  SET payload = jsonb_build_object('redacted', true, 'type', w.payload->>'type')
  WHERE w.provider = 'email' AND (
    email_archive_keys(w.payload) && ARRAY(SELECT 'id:' || id FROM unnest($1::text[]) AS id)
    OR (email_archive_keys(w.payload)
          && email_archive_keys(jsonb_build_object('data', jsonb_build_object('to', to_jsonb($2::text[]))))
        AND w.status <> 'RECEIVED'::"WebhookEventStatus" AND w.retry_at IS NULL))`;

/**
 * The billing archive scrub (scrubBillingArchive), through the partial index
 * webhook_events_billing_customer_idx on billing_archive_customer(payload) (migration
 * 20261210090000_billing_archive_customer_index). Rows still to be applied are left (see
 * scrubBillingArchive): RECEIVED, FAILED with `retry_at`, and parked ($2 the reason, $3 the oldest
 * receipt parkedFor still re-applies). As for the e-mail scrub, the status is re-checked on a row the
 * worker held. Exported for the plan check in test/users/erasure-audit.e2e-spec.ts.
 */
export const SCRUB_BILLING_ARCHIVE_SQL = `
  UPDATE webhook_events
  SET payload = jsonb_build_object('redacted', true, 'type', payload->>'event_type')
  WHERE provider = 'billing' AND billing_archive_customer(payload) = ANY($1::text[])
    AND status <> 'RECEIVED'::"WebhookEventStatus" AND retry_at IS NULL
    AND NOT (status = 'SKIPPED'::"WebhookEventStatus" AND error IS NOT DISTINCT FROM $2::text AND received_at >= $3::timestamptz)`;

export interface ArchiveFilter {
  provider?: string;
  status?: 'RECEIVED' | 'PROCESSED' | 'SKIPPED' | 'FAILED';
  eventType?: string;
  from?: Date;
  to?: Date;
}

function whereOf(filter: ArchiveFilter): Prisma.WebhookEventWhereInput {
  return {
    ...(filter.provider ? { provider: filter.provider } : {}),
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.eventType ? { eventType: filter.eventType } : {}),
    ...(filter.from || filter.to
      ? {
          receivedAt: {
            ...(filter.from ? { gte: filter.from } : {}),
            ...(filter.to ? { lte: filter.to } : {}),
          },
        }
      : {}),
  };
}

/**
 * Gives back the claims a reopen took for rows it did not reopen (no longer FAILED or due by the time their
 * lock was taken), so the provider's redelivery or a later replay is accepted again.
 */
async function releaseClaims(
  tx: Tx,
  claimed: readonly { provider: string; event_id: string }[],
  reopened: readonly { provider: string; event_id: string }[],
): Promise<void> {
  const kept = new Set(reopened.map((r) => `${r.provider}\u0000${r.event_id}`));
  const stray = claimed.filter((c) => !kept.has(`${c.provider}\u0000${c.event_id}`));
  if (stray.length === 0) return;
  await tx.$executeRaw`
    DELETE FROM processed_webhook_events
    WHERE (provider, event_id) IN (
      SELECT * FROM unnest(${stray.map((c) => c.provider)}::text[], ${stray.map((c) => c.event_id)}::text[]))`;
}

/** A RECEIVED archive row as the intake statement, the relay and the bulk replay return it. */
interface WaitingRow {
  id: string;
  provider: string;
  received_at: Date;
  intake_batch: string | null;
}

const acceptedRowOf = (row: WaitingRow): AcceptedRow => ({
  id: row.id,
  provider: row.provider,
  receivedAt: row.received_at,
  batch: row.intake_batch,
});

/**
 * The intake statement: the claims, then the archive rows of what was claimed, for a batch of events. The
 * batch arrives as one JSON document (intakeDocument): against one text[] parameter per column, that spares
 * the driver the array literal's escaping of every payload and the server the array's parse before each
 * payload's own (with Paddle's payload, under half the driver's CPU and about a fifth less of the server's).
 */
const INTAKE_SQL = `
  WITH input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb)
      AS i(provider text, event_id text, event_type text, payload jsonb, occurred_at timestamptz, source text)
  ), claim AS (
    INSERT INTO processed_webhook_events (provider, event_id, event_type)
    SELECT provider, event_id, event_type FROM input
    ON CONFLICT DO NOTHING
    RETURNING provider, event_id
  )
  INSERT INTO webhook_events
    (id, provider, event_id, event_type, payload, status, occurred_at, attempts, source, intake_batch)
  SELECT gen_random_uuid(), i.provider, i.event_id, i.event_type, i.payload,
         'RECEIVED'::"WebhookEventStatus", i.occurred_at, 0, i.source, $2::bigint
  FROM claim JOIN input i USING (provider, event_id)
  ON CONFLICT (provider, event_id) DO UPDATE
    SET status = 'RECEIVED'::"WebhookEventStatus", payload = EXCLUDED.payload, error = NULL,
        processed_at = NULL, event_type = EXCLUDED.event_type, occurred_at = EXCLUDED.occurred_at,
        received_at = now(), source = EXCLUDED.source, intake_batch = EXCLUDED.intake_batch, retry_at = NULL
    WHERE webhook_events.status = 'FAILED'
  RETURNING id, provider, event_id, received_at, intake_batch::text AS intake_batch`;

/**
 * The intake statement's input: one object per event, its payload nested as it is (serialised once, never
 * escaped into a string). A payload is never a bare JSON null (Prisma.InputJsonValue has no null), which
 * jsonb_to_recordset would read as SQL NULL.
 */
function intakeDocument(events: readonly AcceptedInput[]): string {
  return JSON.stringify(
    events.map(({ provider, event }) => ({
      provider,
      event_id: event.eventId,
      event_type: event.eventType,
      occurred_at: event.occurredAt ?? null,
      source: event.source ?? 'delivery',
      payload: event.payload,
    })),
  );
}
