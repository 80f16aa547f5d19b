import { Injectable } from '@nestjs/common';
import { type Db, driverOf } from '../../infra/prisma/prisma.service.js';
import type { SqlParams } from '../../infra/prisma/sql-params.js';
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

const INSERT_SQL = `
  INSERT INTO audit_logs (id, actor, action, user_id, resource_type, resource_id, details, request_id)
  VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6::jsonb, $7)`;

const INSERT_MANY_SQL = `
  INSERT INTO audit_logs (id, actor, action, user_id, resource_type, resource_id, details, request_id)
  SELECT gen_random_uuid(), actor, action, user_id, resource_type, resource_id, details, request_id
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[])
    AS e(actor, action, user_id, resource_type, resource_id, details, request_id)`;

@Injectable()
export class AuditRepository {
  /** One entry, on the driver: every webhook, credit and account change writes one. */
  async insert(db: Db, row: AuditRow): Promise<void> {
    await driverOf(db).query(INSERT_SQL, [
      row.actor,
      row.action,
      row.userId,
      row.resourceType,
      row.resourceId,
      JSON.stringify(row.details),
      row.requestId,
    ]);
  }

  /** Several entries in one statement (a unit that collects its writes: a batch of webhook events). */
  async insertMany(db: Db, rows: readonly AuditRow[]): Promise<void> {
    if (rows.length === 0) return;
    await driverOf(db).query(INSERT_MANY_SQL, [
      rows.map((row) => row.actor),
      rows.map((row) => row.action),
      rows.map((row) => row.userId),
      rows.map((row) => row.resourceType),
      rows.map((row) => row.resourceId),
      rows.map((row) => JSON.stringify(row.details)),
      rows.map((row) => row.requestId),
    ]);
  }

  /**
   * The audit_logs part of a bulk statement a caller composes (a broadcast page): a data-modifying CTE body
   * that inserts the `rows` whose position (`ord`) the caller's CTE `keep` lists (column `ord`).
   */
  insertManyPart(params: SqlParams, rows: (AuditRow & { ord: number })[], keep: string): string {
    const col = <K extends keyof AuditRow | 'ord'>(key: K) => params.add(rows.map((row) => row[key]));
    const details = params.add(rows.map((row) => JSON.stringify(row.details)));
    return `INSERT INTO audit_logs (id, actor, action, user_id, resource_type, resource_id, details, request_id)
       SELECT gen_random_uuid(), actor, action, user_id, resource_type, resource_id, details, request_id
       FROM unnest(${col('actor')}::text[], ${col('action')}::text[], ${col('userId')}::text[],
                   ${col('resourceType')}::text[], ${col('resourceId')}::text[], ${details}::jsonb[],
                   ${col('requestId')}::text[], ${col('ord')}::int[])
         AS e(actor, action, user_id, resource_type, resource_id, details, request_id, ord)
       WHERE e.ord IN (SELECT ord FROM ${keep})`;
  }
}
