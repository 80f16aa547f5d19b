import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
// @ts-expect-error plain ESM script without type declarations
import { check, MIGRATIONS_DIR, SCHEMA_PATH, status } from '../../scripts/migrate.mjs';

interface CheckResult {
  ok: boolean;
  sql: string;
}

// check() only needs a server (its shadow databases live there): the test server, never DATABASE_URL or
// whatever answers on 127.0.0.1:5432.
const databaseUrl = `${process.env.TEST_PG_SERVER_URL}/postgres`;
const temps: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
};
afterAll(() => temps.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe('migrations', () => {
  it('schema.prisma and prisma/migrations agree (no missing migration)', async () => {
    const result = (await check({ databaseUrl })) as CheckResult;
    expect(result.sql).toBe('');
    expect(result.ok).toBe(true);
  });

  it('reports a model that has no migration, with the SQL that is missing', async () => {
    const dir = tempDir('migrations-schema-');
    const schemaPath = join(dir, 'schema.prisma');
    writeFileSync(
      schemaPath,
      `${readFileSync(SCHEMA_PATH as string, 'utf8')}
model MigrationCheckProbe {
  id String @id @db.Uuid

  @@map("migration_check_probe")
}
`,
    );
    const result = (await check({ databaseUrl, schemaPath })) as CheckResult;
    expect(result.ok).toBe(false);
    expect(result.sql).toMatch(/CREATE TABLE "migration_check_probe"/);
  });

  it('reports a migrations folder that lacks its newest generated migration', async () => {
    const migrationsDir = tempDir('migrations-folder-');
    cpSync(MIGRATIONS_DIR as string, migrationsDir, { recursive: true });
    // The newest migration Prisma wrote (its "-- CreateTable"-style markers): hand-written SQL such as a
    // partial index or a trigger is outside what schema.prisma can describe, so its absence is invisible.
    const generated = readdirSync(migrationsDir)
      .filter((name) => /^\d{14}_/.test(name))
      .filter((name) =>
        /^-- (Create|Alter|Drop|Add|Rename)\w+$/m.test(
          readFileSync(join(migrationsDir, name, 'migration.sql'), 'utf8'),
        ),
      )
      .sort();
    expect(generated.length).toBeGreaterThan(1);
    rmSync(join(migrationsDir, generated.at(-1)!), { recursive: true });
    const result = (await check({ databaseUrl, migrationsDir })) as CheckResult;
    expect(result.ok).toBe(false);
    expect(result.sql.trim()).not.toBe('');
  });

  it('gives every table owned by a user a (user_id, created_at) index', async () => {
    const client = new pg.Client({
      connectionString: `${process.env.TEST_PG_SERVER_URL}/${process.env.TEST_DB_TEMPLATE}`,
    });
    await client.connect();
    try {
      const { rows } = await client.query<{ table: string; leading: string[] | null }>(
        `SELECT c.relname AS table,
                (SELECT array_agg(DISTINCT a1.attname || ',' || a2.attname)
                 FROM pg_index i
                 JOIN pg_attribute a1 ON a1.attrelid = i.indrelid AND a1.attnum = i.indkey[0]
                 JOIN pg_attribute a2 ON a2.attrelid = i.indrelid AND a2.attnum = i.indkey[1]
                 WHERE i.indrelid = c.oid AND i.indnatts >= 2) AS leading
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind = 'r'
           AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = c.oid AND attname = 'user_id' AND NOT attisdropped)
           AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = c.oid AND attname = 'created_at' AND NOT attisdropped)
         ORDER BY 1`,
      );
      expect(rows.length).toBeGreaterThan(5);
      expect(
        rows.filter((row) => !(row.leading ?? []).includes('user_id,created_at')).map((row) => row.table),
      ).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('the test template database has every migration applied and none failed', async () => {
    const url = `${process.env.TEST_PG_SERVER_URL}/${process.env.TEST_DB_TEMPLATE}`;
    const result = (await status({ databaseUrl: url })) as {
      ok: boolean;
      pending: string[];
      failed: unknown[];
    };
    expect(result.pending).toEqual([]);
    expect(result.failed).toEqual([]);
    expect(result.ok).toBe(true);
  });
});
