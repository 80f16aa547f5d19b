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

/** $1 is a JSON array of rows in AuditRow's field names (written unescaped, parsed once; see insertMany). */
const INSERT_MANY_SQL = `
  INSERT INTO audit_logs (id, actor, action, user_id, resource_type, resource_id, details, request_id)
  SELECT gen_random_uuid(), actor, action, "userId", "resourceType", "resourceId", details, "requestId"
  FROM jsonb_to_recordset($1::jsonb)
    AS e(actor text, action text, "userId" text, "resourceType" text, "resourceId" text, details jsonb,
         "requestId" text)`;

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

  /**
   * Several entries in one statement (a unit that collects its writes: a batch of webhook events). The rows
   * travel as one JSON document, as the intake's and the subscriptions' batch statements do: no array
   * literal to escape each entry's details into.
   */
  async insertMany(db: Db, rows: readonly AuditRow[]): Promise<void> {
    if (rows.length === 0) return;
    await driverOf(db).query(INSERT_MANY_SQL, [JSON.stringify(rows)]);
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
