// Connections for the migration runner: a DATABASE_URL read exactly as the application's pg pool reads
// it, the server's maintenance database, and creating (or dropping) the target database.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT } from '../lib/env.mjs';

// pg's own connection-string parser (a dependency of pg, not of this project), so URLs mean exactly
// what they mean to the application's pg pool.
const { parseIntoClientConfig } = createRequire(import.meta.resolve('pg'))('pg-connection-string');

export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/subscription_service';
export const SCHEMA_PATH = join(ROOT, 'prisma', 'schema.prisma');
export const MIGRATIONS_DIR = join(ROOT, 'prisma', 'migrations');

export function resolveOptions(options = {}) {
  return {
    databaseUrl: options.databaseUrl ?? process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    schemaPath: options.schemaPath ?? SCHEMA_PATH,
    migrationsDir: options.migrationsDir ?? MIGRATIONS_DIR,
    log: options.log ?? (() => {}),
  };
}

// Discrete fields, never { connectionString }: pg lets the string win over `database`, so a config
// meant for the shadow or maintenance database would silently point at the main one.
export function connectionConfig(databaseUrl) {
  const { connectionString: _ignored, schema, ...config } = parseIntoClientConfig(databaseUrl);
  if (!config.database) throw new Error(`DATABASE_URL has no database name: ${redact(databaseUrl)}`);
  if (typeof schema !== 'string' || !schema) return { config };
  // Prisma's ?schema= parameter: the engine reads it from the adapter, the migration SQL from search_path.
  return { config: { ...config, options: `-c search_path=${quoteIdent(schema)}` }, schema };
}

export function redact(databaseUrl) {
  return databaseUrl.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

export function quoteIdent(name) {
  return `"${name.replaceAll('"', '""')}"`;
}

// Runs `fn` on a connection to the server's maintenance database (CREATE/DROP DATABASE cannot run
// inside the database they affect, and the target may not exist yet).
export async function withServer(config, fn) {
  for (const database of ['postgres', 'template1']) {
    const client = new pg.Client({ ...config, database });
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      if (error.code === '3D000' && database === 'postgres') continue;
      throw error;
    }
    try {
      return await fn(client);
    } finally {
      await client.end().catch(() => {});
    }
  }
}

export async function databaseExists(config) {
  return withServer(config, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
      config.database,
    ]);
    return rowCount > 0;
  });
}

/** Creates the database named in the URL unless it exists. Returns true when it created it. */
export async function ensureDatabase({ databaseUrl } = {}) {
  const { config } = connectionConfig(resolveOptions({ databaseUrl }).databaseUrl);
  return withServer(config, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [
      config.database,
    ]);
    if (rowCount > 0) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(config.database)}`);
      return true;
    } catch (error) {
      // Another process (a parallel test worker) created it between the check and the CREATE.
      if (error.code === '42P04' || error.code === '23505') return false;
      throw error;
    }
  });
}

/** Drops the database named in the URL, closing its connections first (PostgreSQL >= 13). */
export async function dropDatabase({ databaseUrl }) {
  const { config } = connectionConfig(databaseUrl);
  return withServer(config, async (client) => {
    const { rowCount } = await client.query(
      `DROP DATABASE IF EXISTS ${quoteIdent(config.database)} WITH (FORCE)`,
    );
    return rowCount !== null;
  });
}
