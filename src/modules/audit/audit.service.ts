import { Injectable } from '@nestjs/common';
import { isForeignKeyViolation } from '../../common/errors/database-errors.js';
import { requestContext } from '../../common/http/request-context.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { Unit } from '../../infra/prisma/unit-of-work.js';
import type { SqlParams } from '../../infra/prisma/sql-params.js';
import { AuditRepository, type AuditRow } from './audit.repository.js';
import { curateDetails, type AuditDetails } from './audit.details.js';

export interface AuditEntry {
  /** `user:<identity_user_id>` for user actions, `system:<job>` or `webhook:<provider>` otherwise. */
  actor: string;
  action: string;
  /** Identity user id of an existing user, or null. */
  userId?: string | null;
  resourceType?: string | null;
  resourceId?: string | null;
  details?: AuditDetails;
}

export const userActor = (identityUserId: string) => `user:${identityUserId}`;
export const systemActor = (job: string) => `system:${job}`;
export const webhookActor = (provider: string) => `webhook:${provider}`;

/**
 * Writes audit entries. `record` writes inside the caller's transaction, so the entry commits or rolls back
 * with the change it describes; `recordStandalone` is an entry about something that wrote nothing else (a
 * read, a refusal, a provider call). Details go through the allowlist here, in one place.
 */
@Injectable()
export class AuditService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly repository: AuditRepository,
  ) {}

  /**
   * Inside a transaction a failed insert has aborted it: no retry is possible, the caller rolls back. In a
   * unit that collects writes (a batch of webhook events) the entry joins the unit's one multi-row insert
   * before its commit.
   */
  async record(tx: Tx, entry: AuditEntry): Promise<void> {
    const row = toRow(entry);
    const unit = Unit.find(tx);
    if (unit?.collectsWrites) {
      unit.collect('audit_logs', row, (rows) => this.repository.insertMany(tx, rows));
      return;
    }
    await this.repository.insert(tx, row);
  }

  /** The entry as its own statement. */
  async recordStandalone(entry: AuditEntry): Promise<void> {
    const data = toRow(entry);
    try {
      await this.repository.insert(this.prisma, data);
    } catch (err) {
      if (data.userId === null || !isForeignKeyViolation(err)) throw err;
      // user_id references users.identity_user_id: the user was erased between the caller's read and this
      // write (the hard delete runs concurrently). Keep the entry as the erasure would have left it, with
      // a null link and the actor string, rather than losing it and failing the request with a 500.
      await this.repository.insert(this.prisma, { ...data, userId: null });
    }
  }

  /**
   * Many entries as a part of a bulk statement the caller composes and runs (a broadcast page records one
   * per recipient in the statement that settles the recipients): curated like every other entry. `keep`
   * names the caller's CTE listing the positions (`ord`) of the entries to write. No retry: the statement
   * fails as a whole.
   */
  recordManyPart(params: SqlParams, entries: (AuditEntry & { ord: number })[], keep: string): string {
    return this.repository.insertManyPart(
      params,
      entries.map((entry) => ({ ...toRow(entry), ord: entry.ord })),
      keep,
    );
  }
}

/** The row of an entry: the actor clipped, the details through the allowlist, the request's id. */
function toRow(entry: AuditEntry): AuditRow {
  return {
    actor: entry.actor.slice(0, 300),
    action: entry.action,
    userId: entry.userId ?? null,
    resourceType: entry.resourceType ?? null,
    resourceId: entry.resourceId ?? null,
    details: curateDetails(entry.details),
    requestId: requestContext.current()?.requestId ?? null,
  };
}
