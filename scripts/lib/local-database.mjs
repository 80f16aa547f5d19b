// Which database `npm start` uses, for the scripts that run beside it (db:migrate*, db:seed, db:reset,
// dev:billing): DATABASE_URL when set; LOCAL_DB=server: PostgreSQL on 127.0.0.1:5432 as postgres;
// otherwise the embedded server under .data/postgres, on the port its postmaster.pid names while it runs
// (npm start moves it when LOCAL_DB_PORT is taken), else LOCAL_DB_PORT. Reads files only: no server is
// started here, and nothing but node: built-ins is imported (the runtime image runs migrate.mjs).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dataDir, portSetting, setting } from './env.mjs';

export const DATABASE_NAME = 'subscription_service';
export const SYSTEM_DATABASE_URL = `postgresql://postgres@127.0.0.1:5432/${DATABASE_NAME}`;
// Development only: the embedded server listens on 127.0.0.1 and its data lives in the ignored .data/.
export const EMBEDDED_PG_PASSWORD = 'dev-only-embedded-postgres';
export const embeddedPgDir = () => join(dataDir(), 'postgres');

export function embeddedDatabaseUrl(port) {
  return `postgresql://postgres:${EMBEDDED_PG_PASSWORD}@127.0.0.1:${port}/${DATABASE_NAME}`;
}

/** The port in a running embedded server's postmaster.pid (its 4th line), or null. */
function runningEmbeddedPort() {
  try {
    const port = Number(readFileSync(join(embeddedPgDir(), 'postmaster.pid'), 'utf8').split('\n')[3]);
    return Number.isInteger(port) && port > 0 ? port : null;
  } catch {
    return null;
  }
}

/** { url, source }: the database `npm start` uses (or would use) with the current environment. */
export function localDatabase() {
  const configured = setting('DATABASE_URL');
  if (configured) return { url: configured, source: 'DATABASE_URL' };
  const mode = setting('LOCAL_DB', 'embedded');
  if (mode === 'server' || mode === 'system') return { url: SYSTEM_DATABASE_URL, source: `LOCAL_DB=${mode}` };
  const running = runningEmbeddedPort();
  // auto: npm start took the server when it answered, and started the embedded one only otherwise.
  if (mode === 'auto' && !running) return { url: SYSTEM_DATABASE_URL, source: 'LOCAL_DB=auto' };
  const port = running ?? portSetting('LOCAL_DB_PORT', 54329);
  return {
    url: embeddedDatabaseUrl(port),
    source: running
      ? 'embedded PostgreSQL (running)'
      : 'embedded PostgreSQL (not running: start it with npm start)',
  };
}
