import { randomUUID } from 'node:crypto';
import type { Db, PrismaService } from '../../infra/prisma/prisma.service.js';
import { SqlParams } from '../../infra/prisma/sql-params.js';
import { camelCase, snakeCase } from '../../common/naming.js';
import { wellFormed } from '../../common/validation/unicode.js';

/** Columns every owned table has (user_id cascades on user delete; index on (user_id, created_at)). */
export interface OwnedRow {
  id: string;
  userId: string;
  createdAt: Date;
  updatedAt: Date;
}

type Where = Record<string, unknown>;
type Data = Record<string, unknown>;

/**
 * The tier limit of a create: at most `max` of the owner's rows that `countedSql` counts (all of them when
 * absent; see OwnedResourceDefinition.limitSql), counted under the advisory lock `lockKey`.
 */
export interface OwnedLimit {
  max: number;
  lockKey: string;
  countedSql?: string;
}

const IDENTIFIER = /^[a-z_]+$/;
/* eslint-disable @typescript-eslint/no-explicit-any -- Prisma's per-model argument types are not
   expressible generically; the repository below is the only caller and builds every argument itself. */
type Args = any;

/**
 * The part of a Prisma model delegate the pattern uses. `db.savedSearch`, `db.workspace` and `db.apiKey`
 * satisfy it as they are; a new owned model does too. Results stay typed as the model's row.
 */
export interface OwnedDelegate<Row extends OwnedRow> {
  findFirst(args: Args): PromiseLike<Row | null>;
  findMany(args: Args): PromiseLike<Row[]>;
  updateManyAndReturn(args: Args): PromiseLike<Row[]>;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * Every query of an owned table, each scoped by the owner: a row of another user is never read, changed
 * or deleted, and it costs the same query as a missing one (no timing signal).
 */
export class OwnedRepository<Row extends OwnedRow> {
  private readonly countSql: string;

  constructor(
    private readonly table: (db: Db) => OwnedDelegate<Row>,
    private readonly sqlTable: string,
  ) {
    if (!IDENTIFIER.test(sqlTable)) throw new Error(`not a table name: ${sqlTable}`);
    this.countSql = `SELECT count(*)::int AS n FROM "${sqlTable}" WHERE "user_id" = $1::uuid`;
  }

  /** `WHERE id = $1 AND user_id = $2`. */
  findOwned(db: Db, userId: string, id: string): PromiseLike<Row | null> {
    return this.table(db).findFirst({ where: { id, userId } });
  }

  /** Newest first, stable on equal timestamps; walks the (user_id, created_at) index backwards. */
  page(db: Db, userId: string, skip: number, take: number): PromiseLike<Row[]> {
    return this.table(db).findMany({
      where: { userId },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      skip,
      take,
    });
  }

  /**
   * The same count outside a transaction, on the driver (the second statement of every full list page):
   * Prisma's client costs several times the CPU of `pg` for one statement (issue 15 item 6).
   */
  async countAlone(prisma: PrismaService, userId: string): Promise<number> {
    const { rows } = await prisma.pool.query<{ n: number }>({
      name: `owned_count_${this.sqlTable}`,
      text: this.countSql,
      values: [userId],
    });
    return rows[0].n;
  }

  /**
   * Inserts the owner's new row and, in the same statement, what `alsoWrite` adds (the audit entry's part;
   * see `written`): ONE round trip instead of a transaction of five statements through Prisma (issue 15
   * item 6). With a limit, `owned_lock_and_count` first takes the owner's advisory lock for this resource
   * and counts under it (a fresh snapshot after the wait, see its migration), so two racing creates cannot
   * both pass; the row is inserted only below the limit, and the lock is held until the statement commits.
   * The new row's id is chosen here, so the caller knows it before the statement runs. The owner comes
   * last so nothing in `data` can override it. Answers the row, or null when the limit refused it.
   */
  insertWithinLimit(
    prisma: PrismaService,
    userId: string,
    data: Data,
    limit: OwnedLimit | null,
    alsoWrite: (params: SqlParams, id: string, writtenRows: string) => string,
  ): Promise<Row | null> {
    const id = randomUUID();
    const params = new SqlParams();
    const { columns, record } = this.fields(params, { ...data, id, userId });
    const counted = limit
      ? `counted AS (SELECT owned_lock_and_count(${params.add(limit.lockKey)}, ${params.add(
          this.countSql + (limit.countedSql ? ` AND (${limit.countedSql})` : ''),
        )}, ${params.add(userId)}::uuid) AS n),`
      : '';
    const below = limit ? `WHERE (SELECT n FROM counted) < ${params.add(limit.max)}::int` : '';
    return this.written(
      prisma,
      params,
      counted,
      `INSERT INTO "${this.sqlTable}" (${columns}) SELECT ${columns} FROM ${record} ${below} RETURNING *`,
      (rows) => alsoWrite(params, id, rows),
    );
  }

  /**
   * `UPDATE ... SET <data>, updated_at = now() WHERE id AND user_id RETURNING *` and what `alsoWrite` adds,
   * in one statement (see `written`): null when nothing matched (a 404; a concurrent delete is not an error).
   */
  updateOwnedWritten(
    prisma: PrismaService,
    userId: string,
    id: string,
    data: Data,
    alsoWrite: (params: SqlParams, writtenRows: string) => string,
  ): Promise<Row | null> {
    const params = new SqlParams();
    const { columns, record } = this.fields(params, data);
    const set = columns
      ? `(${columns}, "updated_at") = (SELECT ${columns}, now() FROM ${record})`
      : `"updated_at" = now()`;
    return this.written(
      prisma,
      params,
      '',
      `UPDATE "${this.sqlTable}" SET ${set}
       WHERE "id" = ${params.add(id)}::uuid AND "user_id" = ${params.add(userId)}::uuid RETURNING *`,
      (rows) => alsoWrite(params, rows),
    );
  }

  /** `DELETE ... WHERE id AND user_id` and what `alsoWrite` adds, in one statement; false when nothing matched. */
  async deleteOwnedWritten(
    prisma: PrismaService,
    userId: string,
    id: string,
    alsoWrite: (params: SqlParams, writtenRows: string) => string,
  ): Promise<boolean> {
    const params = new SqlParams();
    const row = await this.written(
      prisma,
      params,
      '',
      `DELETE FROM "${this.sqlTable}" WHERE "id" = ${params.add(id)}::uuid AND "user_id" = ${params.add(userId)}::uuid
       RETURNING *`,
      (rows) => alsoWrite(params, rows),
    );
    return row !== null;
  }

  /**
   * Runs `change` (a data-modifying statement on this table that returns its row) with `before` CTEs in
   * front and, after it, the part `alsoWrite` returns: it reads the CTE it is given (column `ord`, 0 when
   * the change wrote a row), so the audit entry is written exactly when the row was. Answers the row with
   * its columns as the model's fields (pg's type parsing), or null when the change wrote none.
   */
  private async written(
    prisma: PrismaService,
    params: SqlParams,
    before: string,
    change: string,
    alsoWrite: (writtenRows: string) => string,
  ): Promise<Row | null> {
    const also = alsoWrite('written_rows');
    const { rows } = await prisma.pool.query<Record<string, unknown>>(
      `WITH ${before}
       changed AS (${change}),
       written_rows AS (SELECT 0 AS ord FROM changed),
       also_written AS (${also})
       SELECT changed.* FROM (SELECT 1) AS one LEFT JOIN changed ON true`,
      params.values,
    );
    if (rows[0].id === null) return null;
    const row = Object.fromEntries(
      Object.entries(rows[0]).map(([column, value]) => [camelCase(column), value]),
    );
    return row as unknown as Row;
  }

  /**
   * The fields of `data` (model field names, in snake_case the table's columns; undefined ones left out) as
   * one JSON parameter read into the table's row type: `columns` names them, `record` is the row to select
   * them from (`jsonb_populate_record`). Requests cannot carry an unpaired surrogate (the JSON body parser
   * refuses it with a 400); a caller outside HTTP that passes one gets U+FFFD in a text field, as a text
   * parameter would, instead of jsonb refusing the whole record (a 500).
   */
  private fields(params: SqlParams, data: Data): { columns: string; record: string } {
    const values: Data = {};
    for (const [field, value] of Object.entries(data)) {
      if (value === undefined) continue;
      const column = snakeCase(field);
      if (!IDENTIFIER.test(column)) throw new Error(`not a column name: ${column}`);
      values[column] = typeof value === 'string' ? wellFormed(value) : value;
    }
    const columns = Object.keys(values)
      .map((column) => `"${column}"`)
      .join(', ');
    if (!columns) return { columns, record: '' };
    const json = params.add(JSON.stringify(values));
    return { columns, record: `jsonb_populate_record(NULL::"${this.sqlTable}", ${json}::jsonb) AS r` };
  }

  /**
   * One `UPDATE ... WHERE id AND user_id [AND where] RETURNING *`: a concurrent delete makes it match
   * nothing (null, a 404), never an error.
   */
  async updateOwned(db: Db, userId: string, id: string, data: Data, where: Where = {}): Promise<Row | null> {
    const rows = await this.table(db).updateManyAndReturn({ where: { ...where, id, userId }, data });
    return rows[0] ?? null;
  }
}
