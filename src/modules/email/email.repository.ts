import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { SqlTx } from '../../infra/prisma/sql-transaction.js';
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
   * Many outcomes in one statement inside the caller's plain-SQL transaction (a broadcast page: one row per
   * recipient). A key recorded before keeps its row (the same e-mail is never logged twice).
   */
  async recordMany(tx: SqlTx, rows: EmailMessageRow[]): Promise<void> {
    if (rows.length === 0) return;
    const col = <K extends keyof EmailMessageRow>(key: K) => rows.map((row) => row[key]);
    await tx.query({
      name: 'email-messages-record-many',
      text: `INSERT INTO email_messages (id, user_id, to_address, template_key, kind, subject, status, reason,
                                   idempotency_key, provider_message_id, broadcast_run_id, html, text)
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                            $8::text[], $9::text[], $10::text[], $11::uuid[], $12::text[], $13::text[])
       ON CONFLICT (idempotency_key) DO NOTHING`,
      values: [
        col('id'),
        col('userId'),
        col('toAddress'),
        col('templateKey'),
        col('kind'),
        col('subject'),
        col('status'),
        col('reason'),
        col('idempotencyKey'),
        col('providerMessageId'),
        col('broadcastRunId'),
        col('html'),
        col('text'),
      ],
    });
  }

  /**
   * Records what the provider said after the send, on the message it sent under `providerMessageId`. A
   * later but weaker status never overwrites a stronger one (a late `delivered` does not hide a bounce):
   * delivery_delayed / soft_bounced < delivered < bounced < complained. Returns how many rows changed.
   */
  async recordDelivery(db: Db, providerMessageId: string, status: DeliveryStatus, at: Date): Promise<number> {
    return db.$executeRaw`
      UPDATE email_messages
      SET delivery_status = ${status}, delivery_updated_at = ${at}
      WHERE provider_message_id = ${providerMessageId}
        AND coalesce(${DELIVERY_RANK}::jsonb ->> delivery_status, '0')::int <= (${DELIVERY_RANK}::jsonb ->> ${status})::int`;
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

/** One email_messages row written in bulk (recordMany). */
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
