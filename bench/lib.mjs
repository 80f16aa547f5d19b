// Shared helpers of the benchmarks: scratch databases, compiled processes, load generation, reporting.
import { spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import pg from 'pg';
import { deploy } from '../scripts/migrate.mjs';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const PG_SERVER = process.env.BENCH_PG_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The Node flags of `npm run start:api` / `start:worker` (heap sizing): the bench starts the compiled
 * processes exactly as production does.
 */
export function productionNodeArgs(script = 'start:api') {
  return scriptWords(script).filter((word) => word.startsWith('--'));
}

/**
 * The environment those scripts set before `node` (`NAME=value` words: the allocator's MALLOC_ARENA_MAX,
 * decision 15n). startProcess gives it to every process it starts, the baselines included; a setting passed
 * by the caller (BENCH_ENV_<NAME>) wins.
 */
export function productionNodeEnv(script = 'start:api') {
  const words = scriptWords(script);
  return Object.fromEntries(words.slice(0, words.indexOf('node')).map((word) => word.split('=', 2)));
}

function scriptWords(script) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  return pkg.scripts[script].split(/\s+/);
}

export const SECRETS = {
  IDENTITY_WEBHOOK_SECRET: `whsec_${Buffer.from('identity-webhook-secret-for-bench-0123456789').toString('base64')}`,
  BILLING_WEBHOOK_SECRET: 'billing-webhook-secret-for-bench-0123456789',
  EMAIL_UNSUBSCRIBE_SECRET: 'unsubscribe-secret-for-bench-0123456789abcdef',
};

export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A migrated scratch database; call drop() at the end. */
export async function scratchDatabase(label, { migrate = true } = {}) {
  const name = `bench_${label}_${randomBytes(3).toString('hex')}`;
  const url = `${PG_SERVER}/${name}`;
  if (migrate) await deploy({ databaseUrl: url, log: () => {} });
  else await withClient(`${PG_SERVER}/postgres`, (client) => client.query(`CREATE DATABASE "${name}"`));
  return {
    name,
    url,
    async drop() {
      const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

/** Starts a Node script as a child process; resolves when `readyUrl` answers. */
export async function startProcess(file, env, { readyUrl, args = productionNodeArgs(), timeoutMs = 30_000 } = {}) {
  if (!existsSync(file)) throw new Error(`${file} is missing (run npm run build)`);
  // BENCH_CPU_PROF=<dir>: profile our own processes (not the baselines) for `node bench/prof-top.mjs`.
  const profile = process.env.BENCH_CPU_PROF && file.includes(`${ROOT}/dist/`) ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const started = performance.now();
  const child = spawn(process.execPath, [...args, ...profile, file], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...productionNodeEnv(), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  let readyMs = null;
  if (readyUrl) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${file} exited: ${stderr.slice(-2000)}`);
      try {
        const res = await fetch(readyUrl);
        await res.arrayBuffer();
        if (res.ok) break;
      } catch {
        // not yet
      }
      if (Date.now() > deadline) throw new Error(`${readyUrl} not ready after ${timeoutMs} ms: ${stderr.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    readyMs = performance.now() - started;
  }
  return {
    child,
    readyMs,
    stderr: () => stderr,
    async rssMb() {
      return statusMb(child.pid, 'VmRSS');
    },
    /** The highest RSS of the process so far (the kernel's high-water mark): the RSS under load. */
    async peakRssMb() {
      return statusMb(child.pid, 'VmHWM');
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function statusMb(pid, field) {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
export async function cpuMs(pid, { reapedChildren = false } = {}) {
  const { readFile } = await import('node:fs/promises');
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime + stime (fields 14 and 15 of stat), in clock ticks of 10 ms; with reapedChildren also cutime +
  // cstime (16 and 17): the CPU of the children that exited and were waited for.
  const own = Number(fields[11]) + Number(fields[12]);
  return (reapedChildren ? own + Number(fields[13]) + Number(fields[14]) : own) * 10;
}

/**
 * CPU time (ms) of the processes on this machine that `pick` chooses by command line: 'own' counts the
 * process, 'reaped' also the children it has waited for; anything else skips it.
 */
async function processesCpuMs(pick) {
  const { readdir, readFile } = await import('node:fs/promises');
  let total = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const how = pick(await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''));
    if (how === 'own' || how === 'reaped') total += await cpuMs(pid, { reapedChildren: how === 'reaped' });
  }
  return total;
}

/**
 * CPU time (ms) of every PostgreSQL process on this machine (the server, its backends, and those that have
 * exited: the server's reaped children). The bench runs PostgreSQL locally. Before 2026-11-28 exited
 * backends were missed, and a phase in which a pool closed connections could show a negative figure.
 */
export function postgresCpuMs() {
  // Backends and auxiliary processes name themselves `postgres: ...`; the server is the postgres binary.
  return processesCpuMs((cmd) => (cmd.startsWith('postgres') ? 'own' : /\/bin\/postgres\0/.test(cmd) ? 'reaped' : null));
}

/** CPU time (ms) of the processes whose command line matches `pattern` (e.g. Redis, the TLS terminator). */
export function matchingCpuMs(pattern) {
  return processesCpuMs((cmd) => (pattern.test(cmd) ? 'own' : null));
}

/**
 * Busy CPU time (ms) of the whole machine so far, every core summed (/proc/stat: all but idle and iowait).
 * Over a phase, divided by its events: what one event cost the machine, whoever spent it.
 */
export async function machineCpuMs() {
  const { readFile } = await import('node:fs/promises');
  const [user, nice, system, , , irq, softirq, steal] = (await readFile('/proc/stat', 'utf8'))
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq + steal) * 10;
}

/**
 * A load run that also reports the CPU one process spent per answered request: on a shared, noisy machine
 * a steadier figure of what a request costs than the throughput.
 */
export async function loadWithCpu(pid, options) {
  const before = await cpuMs(pid);
  const result = await load(options);
  result.cpuMsPerRequest = result.total > 0 ? ((await cpuMs(pid)) - before) / result.total : NaN;
  return result;
}

/** One autocannon run from this (separate) process. */
export async function load({ url, connections, duration = 5, method = 'GET', headers, body, requests, overallRate }) {
  const result = await autocannon({
    url,
    connections,
    duration,
    method,
    headers,
    body,
    requests,
    pipelining: 1,
    ...(overallRate ? { overallRate } : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    total: result.requests.total,
  };
}

export const ratio = (value, baseline) => (baseline > 0 ? value / baseline : NaN);
export const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** Runs `fn` with one pg client on `url`. */
export async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A local identity provider: a JWKS over HTTP and RS256 tokens signed with its key (real auth path). */
export async function identityProvider() {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = `bench_${randomBytes(4).toString('hex')}`;
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] });
  const server = createHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(jwks);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  return {
    issuer,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    /** A token for `sub` (with a verified `email`, so the API creates the user just in time), valid for `ttl` seconds. */
    token(sub, email, ttl = 3600) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ email, email_verified: true })
        .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
        .setIssuer(issuer)
        .setSubject(sub)
        .setIssuedAt(now)
        .setExpirationTime(now + ttl)
        .sign(privateKey);
    },
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  };
}

/** A Resend-shaped e-mail API: `POST /emails` and `POST /emails/batch` -> ids. Counts requests and deliveries per address. */
export async function fakeEmailApi(apiKey) {
  const stats = { requests: 0, delivered: 0, addresses: new Map(), requestTimes: [] };
  const server = createHttpServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      stats.requests += 1;
      stats.requestTimes.push(performance.now());
      if (req.headers.authorization !== `Bearer ${apiKey}`) return void res.writeHead(401).end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const messages = Array.isArray(body) ? body : [body];
      for (const m of messages) {
        const to = Array.isArray(m.to) ? m.to[0] : m.to;
        stats.addresses.set(to, (stats.addresses.get(to) ?? 0) + 1);
      }
      stats.delivered += messages.length;
      const ids = messages.map(() => ({ id: randomUUID() }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(Array.isArray(body) ? { data: ids } : ids[0]));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    stats,
    reset() {
      stats.requests = 0;
      stats.delivered = 0;
      stats.addresses.clear();
      stats.requestTimes = [];
    },
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  };
}

/** `Paddle-Signature` for a raw body (DESIGN section 4). */
export function paddleSignature(secret, rawBody, ts = Math.floor(Date.now() / 1000)) {
  const h1 = createHmac('sha256', secret).update(`${ts}:${rawBody}`).digest('hex');
  return `ts=${ts};h1=${h1}`;
}

export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** A Chroma-shaped heartbeat (`GET /api/v2/heartbeat`): the vector store is only probed by the health checks. */
export async function fakeVectorStore() {
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ 'nanosecond heartbeat': Date.now() * 1e6 }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  };
}

/**
 * Deployed boots need TLS to PostgreSQL (sslmode=require or stricter); the local server runs without it.
 * A TLS terminator in front of it (bench/tls-proxy.mjs), started once per bench run in a process of its
 * own: in this process it shared the event loop with the load generator, so every database round trip of
 * the API and the worker waited behind the senders' signing (2026-11-28). Figures that touch the database
 * pay for a real TLS hop, as in production.
 */
let tlsProxy;
export async function deployedDatabaseUrl(url) {
  const target = new URL(url);
  // BENCH_DB_TLS=server: PostgreSQL itself speaks TLS (ssl=on with that certificate): no proxy hop.
  if (process.env.BENCH_DB_TLS === 'server') tlsProxy = target.port || '5432';
  if (!tlsProxy) {
    const child = spawn(process.execPath, [join(ROOT, 'bench', 'tls-proxy.mjs'), target.hostname, target.port || '5432'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    tlsProxy = await new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`the TLS proxy exited (${code})`)));
      child.stdout.once('data', (chunk) => resolve(Number(String(chunk).trim())));
    });
    // Running, it must not keep the bench alive.
    child.unref();
    child.stdin.unref?.();
    child.stdout.unref?.();
    process.once('exit', () => child.kill());
  }
  const out = new URL(url);
  out.hostname = '127.0.0.1';
  out.port = String(tlsProxy);
  out.searchParams.set('sslmode', 'verify-full');
  out.searchParams.set('sslrootcert', join(ROOT, 'test', 'fakes', 'tls', 'postgres-test.crt'));
  return out.toString();
}

/** What the release 0.2 boot refusals require beyond the bench's own settings. */
export const DEPLOYED_EXTRAS = {
  BILLING_API_URL: 'https://billing.bench.invalid',
  IDENTITY_ALLOW_ANY_AUDIENCE: 'true',
};
