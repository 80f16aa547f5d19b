import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { SqlParams } from '../../infra/prisma/sql-params.js';
import type { EmailMessage, Prisma } from '../../generated/prisma/client.js';

@Injectable()
export class EmailRepository {
  findByIdempotencyKey(db: Db, idempotencyKey: string): Promise<EmailMessage | null> {
    return db.emailMessage.findUnique({ where: { idempotencyKey } });
  }

  /** One row per logical e-mail: a retry after a failure overwrites the failed row. */
  record(db: Db, data: Prisma.EmailMessageUncheckedCreateInput): Promise<EmailMessage> {
    const { idempotencyKey, ...rest } = data;
    return db.emailMessage.upsert({ where: { idempotencyKey }, create: data, update: rest });
  }

  /**
   * The email_messages part of a bulk statement a caller composes (a broadcast page records its recipient
   * rows, messages and audit entries in one statement, one round trip): a data-modifying CTE body that
   * inserts the `rows` whose page position (`ord`) the caller's CTE `keep` lists (column `ord`): the
   * outcomes its own part recorded. A key recorded before keeps its row (never logged twice).
   */
  recordManyPart(params: SqlParams, rows: (EmailMessageRow & { ord: number })[], keep: string): string {
    const col = <K extends keyof EmailMessageRow | 'ord'>(key: K) => params.add(rows.map((row) => row[key]));
    return `INSERT INTO email_messages (id, user_id, to_address, template_key, kind, subject, status, reason,
                                 idempotency_key, provider_message_id, broadcast_run_id, html, text)
       SELECT id, user_id, to_address, template_key, kind, subject, status, reason, idempotency_key,
              provider_message_id, broadcast_run_id, html, text
       FROM unnest(${col('id')}::uuid[], ${col('userId')}::uuid[], ${col('toAddress')}::text[],
                   ${col('templateKey')}::text[], ${col('kind')}::text[], ${col('subject')}::text[],
                   ${col('status')}::text[], ${col('reason')}::text[], ${col('idempotencyKey')}::text[],
                   ${col('providerMessageId')}::text[], ${col('broadcastRunId')}::uuid[], ${col('html')}::text[],
                   ${col('text')}::text[], ${col('ord')}::int[])
         AS m(id, user_id, to_address, template_key, kind, subject, status, reason, idempotency_key,
              provider_message_id, broadcast_run_id, html, text, ord)
       WHERE m.ord IN (SELECT ord FROM ${keep})
       ON CONFLICT (idempotency_key) DO NOTHING`;
  }

  /**
   * Records what the provider said after the send, on the message it sent under `providerMessageId`. A
   * later but weaker status never overwrites a stronger one (a late `delivered` does not hide a bounce):
   * delivery_delayed / soft_bounced < delivered < bounced < complained. Between equal ranks the event time
   * `at` decides, newer wins: applied late (an automatic re-apply, days later), an older `delivery_delayed`
   * does not replace a newer `soft_bounced`, nor move `delivery_updated_at` back. Returns how many rows
   * changed.
   */
  async recordDelivery(db: Db, providerMessageId: string, status: DeliveryStatus, at: Date): Promise<number> {
    return db.$executeRaw`
      WITH ranks AS (SELECT ${DELIVERY_RANK}::jsonb AS r)
      UPDATE email_messages
      SET delivery_status = ${status}, delivery_updated_at = ${at}
      FROM ranks
      WHERE provider_message_id = ${providerMessageId}
        AND (coalesce(r ->> delivery_status, '0')::int < (r ->> ${status})::int
          OR (coalesce(r ->> delivery_status, '0')::int = (r ->> ${status})::int
            AND (delivery_updated_at IS NULL OR delivery_updated_at <= ${at})))`;
  }

  /** The messages the provider sent under this id (one, or one per batch member sharing none). */
  findByProviderId(db: Db, providerMessageId: string): Promise<EmailMessage[]> {
    return db.emailMessage.findMany({ where: { providerMessageId }, take: 10 });
  }

  /**
   * Marks the first complaint about a message; false when one was recorded already (one email.complaint
   * per message, whatever the number of deliveries of the event).
   */
  async markComplained(db: Db, messageId: string, at: Date): Promise<boolean> {
    const { count } = await db.emailMessage.updateMany({
      where: { id: messageId, complainedAt: null },
      data: { complainedAt: at },
    });
    return count === 1;
  }
}

/** One email_messages row written in bulk (recordManyPart). */
export interface EmailMessageRow {
  id: string;
  userId: string;
  toAddress: string;
  templateKey: string;
  kind: string;
  subject: string;
  status: 'sent' | 'failed' | 'skipped';
  /** Skip reason or failure message. */
  reason: string | null;
  idempotencyKey: string;
  providerMessageId: string | null;
  broadcastRunId: string | null;
  html: string | null;
  text: string | null;
}

export type DeliveryStatus = 'delivery_delayed' | 'soft_bounced' | 'delivered' | 'bounced' | 'complained';

const DELIVERY_RANK = JSON.stringify({
  delivery_delayed: 1,
  soft_bounced: 1,
  delivered: 2,
  bounced: 3,
  complained: 4,
});
