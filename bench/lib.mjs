// Shared helpers of the benchmarks: scratch databases, compiled processes, load generation, reporting.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { deploy } from '../scripts/migrate.mjs';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const PG_SERVER = process.env.BENCH_PG_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

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
export async function scratchDatabase(label) {
  const name = `bench_${label}_${randomBytes(3).toString('hex')}`;
  const url = `${PG_SERVER}/${name}`;
  await deploy({ databaseUrl: url });
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
export async function startProcess(file, env, { readyUrl, args = [], timeoutMs = 30_000 } = {}) {
  if (!existsSync(file)) throw new Error(`${file} is missing (run npm run build)`);
  const started = performance.now();
  const child = spawn(process.execPath, [...args, file], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
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
      const { readFile } = await import('node:fs/promises');
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8').catch(() => '');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
      return kb / 1024;
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

/** One autocannon run from this (separate) process. */
export async function load({ url, connections, duration = 5, method = 'GET', headers, body, requests }) {
  const result = await autocannon({ url, connections, duration, method, headers, body, requests, pipelining: 1 });
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
