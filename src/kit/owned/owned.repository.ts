import { randomUUID } from 'node:crypto';
import type { Db, PrismaService } from '../../infra/prisma/prisma.service.js';
import { SqlParams } from '../../infra/prisma/sql-params.js';
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

/** What a create inserted, or that the limit refused it. */
export type Inserted<Row> = { row: Row; refused: false } | { row: null; refused: true };

const IDENTIFIER = /^[a-z_]+$/;
const snakeCase = (field: string): string => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camelCase = (column: string): string => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
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
  deleteMany(args: Args): PromiseLike<{ count: number }>;
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
   * Inserts the owner's new row and, in the same statement, what `alsoWrite` adds (the audit entry's part,
   * which writes only when the CTE `inserted_rows` (column `ord`, 0) has the row): ONE round trip instead of
   * a transaction of five statements through Prisma (issue 15 item 6). With a limit, `owned_lock_and_count`
   * first takes the owner's advisory lock for this resource and counts under it (a fresh snapshot after the
   * wait, see its migration), so two racing creates cannot both pass; the row is inserted only below the
   * limit, and the lock is held until the statement commits. The new row's id is chosen here, so the caller
   * knows it before the statement runs. The owner comes last so nothing in `data` can override it. The
   * fields travel as one JSON object, read into the table's row type (`jsonb_populate_record`).
   */
  async insertWithinLimit(
    prisma: PrismaService,
    userId: string,
    data: Data,
    limit: OwnedLimit | null,
    alsoWrite: (params: SqlParams, id: string, insertedRows: string) => string,
  ): Promise<Inserted<Row>> {
    const id = randomUUID();
    const values: Data = {};
    for (const [field, value] of Object.entries(data)) {
      if (value === undefined) continue;
      const column = snakeCase(field);
      if (!IDENTIFIER.test(column)) throw new Error(`not a column name: ${column}`);
      // A text field may hold an unpaired surrogate, stored as U+FFFD as a text parameter would be (the
      // validators refuse them in JSON fields, where it could not be told apart from data).
      values[column] = typeof value === 'string' ? wellFormed(value) : value;
    }
    values.id = id;
    values.user_id = userId;
    const columns = Object.keys(values)
      .map((column) => `"${column}"`)
      .join(', ');
    const params = new SqlParams();
    const record = params.add(JSON.stringify(values));
    const counted = limit
      ? `counted AS (SELECT owned_lock_and_count(${params.add(limit.lockKey)}, ${params.add(
          this.countSql + (limit.countedSql ? ` AND (${limit.countedSql})` : ''),
        )}, ${params.add(userId)}::uuid) AS n),`
      : '';
    const below = limit ? `WHERE (SELECT n FROM counted) < ${params.add(limit.max)}::int` : '';
    const also = alsoWrite(params, id, 'inserted_rows');
    const { rows } = await prisma.pool.query<Record<string, unknown>>(
      `WITH ${counted}
       inserted AS (
         INSERT INTO "${this.sqlTable}" (${columns})
         SELECT ${columns} FROM jsonb_populate_record(NULL::"${this.sqlTable}", ${record}::jsonb) AS r
         ${below}
         RETURNING *),
       inserted_rows AS (SELECT 0 AS ord FROM inserted),
       also_written AS (${also})
       SELECT inserted.*
       FROM (SELECT 1) AS one LEFT JOIN inserted ON true`,
      params.values,
    );
    const inserted = rows[0];
    if (inserted.id === null) return { row: null, refused: true };
    const row = Object.fromEntries(
      Object.entries(inserted).map(([column, value]) => [camelCase(column), value]),
    );
    return { row: row as unknown as Row, refused: false };
  }

  /**
   * One `UPDATE ... WHERE id AND user_id [AND where] RETURNING *`: a concurrent delete makes it match
   * nothing (null, a 404), never an error.
   */
  async updateOwned(db: Db, userId: string, id: string, data: Data, where: Where = {}): Promise<Row | null> {
    const rows = await this.table(db).updateManyAndReturn({ where: { ...where, id, userId }, data });
    return rows[0] ?? null;
  }

  /** One `DELETE ... WHERE id AND user_id`; false when nothing matched. */
  async deleteOwned(db: Db, userId: string, id: string): Promise<boolean> {
    return (await this.table(db).deleteMany({ where: { id, userId } })).count > 0;
  }
}
