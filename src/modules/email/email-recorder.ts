import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { SqlParams } from '../../infra/prisma/sql-params.js';
import type { EmailMessage, User } from '../../generated/prisma/client.js';
import { type AuditEntry, AuditService, systemActor } from '../audit/audit.service.js';
import { EmailRepository, type EmailMessageRow } from './email.repository.js';
import type { EmailKind, SendEmailJob } from './email.types.js';
import type { SkipReason } from './send-policy.js';

/** What a message row keeps of the body: only the console provider stores it, for the developer. */
export interface StoredBody {
  html: string | null;
  text: string | null;
}

/** One e-mail's outcome recorded in bulk: its email_messages row and, for the audit entry, its user. */
export interface EmailRecord extends Omit<EmailMessageRow, 'id'> {
  identityUserId: string;
}

/**
 * The record of every e-mail, sent, failed or skipped: its email_messages row and its email.<status> audit
 * entry, written together. Single sends (EmailService) record one at a time; a broadcast page records its
 * recipients in bulk, as parts of the statement that settles them (`recordManyParts`).
 */
@Injectable()
export class EmailRecorder {
  constructor(
    private readonly prisma: PrismaService,
    private readonly repository: EmailRepository,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Many outcomes (a broadcast page) as parts of the bulk statement the caller composes: the message rows
   * and their email.<status> audit entries (the entries a single send writes), for the records whose page
   * position (`ord`) the caller's CTE `keep` lists. Returns the two data-modifying CTE bodies.
   */
  recordManyParts(
    params: SqlParams,
    actor: string,
    records: (EmailRecord & { ord: number })[],
    keep: string,
  ): string[] {
    const rows = records.map(({ identityUserId: _, ...row }) => ({ id: randomUUID(), ...row }));
    return [
      this.repository.recordManyPart(params, rows, keep),
      this.audit.recordManyPart(
        params,
        rows.map((row, i) => ({
          ...emailAudit(actor, row.id, { ...row, identityUserId: records[i].identityUserId }),
          ord: row.ord,
        })),
        keep,
      ),
    ];
  }

  /** A single send's outcome (sent or failed) and its audit entry, in one transaction. */
  async record(
    user: User,
    job: SendEmailJob,
    kind: EmailKind,
    subject: string,
    status: 'sent' | 'failed',
    providerMessageId: string | null,
    error: string | null,
    body: StoredBody = { html: null, text: null },
  ): Promise<EmailMessage> {
    this.metrics.emails.inc({ kind, status });
    return this.prisma.$transaction(async (tx) => {
      const row = await this.repository.record(tx, {
        userId: user.id,
        toAddress: user.email,
        templateKey: job.templateKey,
        kind,
        subject,
        status,
        reason: error,
        idempotencyKey: job.idempotencyKey,
        providerMessageId,
        ...body,
      });
      await this.audit.record(
        tx,
        emailAudit(systemActor('email'), row.id, {
          status,
          templateKey: job.templateKey,
          kind,
          reason: error,
          identityUserId: user.identityUserId,
        }),
      );
      return row;
    });
  }

  /** A single send that the policy skipped: its row (when the user exists) and its audit entry. */
  async recordSkip(job: SendEmailJob, kind: EmailKind, reason: SkipReason, user: User | null): Promise<void> {
    this.metrics.emails.inc({ kind, status: 'skipped' });
    await this.prisma.$transaction(async (tx) => {
      const row = user
        ? await this.repository.record(tx, {
            userId: user.id,
            toAddress: user.email,
            templateKey: job.templateKey,
            kind,
            subject: '',
            status: 'skipped',
            reason,
            idempotencyKey: job.idempotencyKey,
          })
        : null;
      await this.audit.record(
        tx,
        emailAudit(systemActor('email'), row?.id ?? null, {
          status: 'skipped',
          templateKey: job.templateKey,
          kind,
          reason,
          identityUserId: user?.identityUserId ?? null,
        }),
      );
    });
  }
}

/**
 * The audit entry of an e-mail's outcome, for a single send and a broadcast recipient alike: email.<status>
 * on the message row, with the skip reason or the failure message.
 */
function emailAudit(
  actor: string,
  messageId: string | null,
  outcome: Pick<EmailMessageRow, 'status' | 'templateKey' | 'kind' | 'reason'> & {
    identityUserId: string | null;
    broadcastRunId?: string | null;
  },
): AuditEntry {
  const { status, reason } = outcome;
  return {
    actor,
    action: `email.${status}`,
    userId: outcome.identityUserId,
    resourceType: 'email',
    resourceId: messageId,
    details: {
      template: outcome.templateKey,
      kind: outcome.kind,
      ...(outcome.broadcastRunId ? { broadcast_id: outcome.broadcastRunId } : {}),
      ...(status === 'skipped' && reason !== null ? { reason } : {}),
      ...(status === 'failed' && reason !== null ? { error: reason } : {}),
    },
  };
}
