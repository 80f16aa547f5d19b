import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { SqlTx } from '../../infra/prisma/sql-transaction.js';
import type { Prisma } from '../../generated/prisma/client.js';
import type { AuditDetailValue } from './audit.details.js';

/** An audit row as AuditService prepared it (details already curated). */
export interface AuditRow {
  actor: string;
  action: string;
  userId: string | null;
  resourceType: string | null;
  resourceId: string | null;
  details: Record<string, AuditDetailValue>;
  requestId: string | null;
}

@Injectable()
export class AuditRepository {
  insert(db: Db, data: Prisma.AuditLogUncheckedCreateInput) {
    return db.auditLog.create({ data, select: { id: true } });
  }

  /** Many entries in one statement (a broadcast page: one per recipient), inside the caller's transaction. */
  async insertMany(tx: SqlTx, rows: AuditRow[]): Promise<void> {
    if (rows.length === 0) return;
    const col = <K extends keyof AuditRow>(key: K) => rows.map((row) => row[key]);
    await tx.query({
      name: 'audit-logs-insert-many',
      text: `INSERT INTO audit_logs (id, actor, action, user_id, resource_type, resource_id, details, request_id)
       SELECT gen_random_uuid(), actor, action, user_id, resource_type, resource_id, details, request_id
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[])
         AS e(actor, action, user_id, resource_type, resource_id, details, request_id)`,
      values: [
        col('actor'),
        col('action'),
        col('userId'),
        col('resourceType'),
        col('resourceId'),
        rows.map((row) => JSON.stringify(row.details)),
        col('requestId'),
      ],
    });
  }
}
