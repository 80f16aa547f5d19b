import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { EmailMessage, Prisma } from '../../generated/prisma/client.js';

export interface EmailMessageRow {
  id: string;
  userId: string | null;
  toAddress: string;
  templateKey: string;
  kind: string;
  subject: string;
  status: 'sent' | 'failed' | 'skipped';
  reason: string | null;
  idempotencyKey: string;
  providerMessageId: string | null;
  broadcastRunId: string | null;
  html: string | null;
  text: string | null;
}

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
   * A broadcast page in one statement with array parameters (Prisma's createMany costs about ten times
   * the CPU); a row that exists already (resumed run) is left alone.
   */
  async recordMany(db: Db, rows: EmailMessageRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    const col = <K extends keyof EmailMessageRow>(key: K) => rows.map((row) => row[key]);
    return db.$executeRaw`
      INSERT INTO email_messages (id, user_id, to_address, template_key, kind, subject, status, reason,
        idempotency_key, provider_message_id, broadcast_run_id, html, text)
      SELECT * FROM unnest(
        ${col('id')}::uuid[], ${col('userId')}::uuid[], ${col('toAddress')}::text[], ${col('templateKey')}::text[],
        ${col('kind')}::text[], ${col('subject')}::text[], ${col('status')}::text[], ${col('reason')}::text[],
        ${col('idempotencyKey')}::text[], ${col('providerMessageId')}::text[], ${col('broadcastRunId')}::uuid[],
        ${col('html')}::text[], ${col('text')}::text[]
      )
      ON CONFLICT (idempotency_key) DO NOTHING`;
  }
}
