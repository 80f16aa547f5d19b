// npm run bench: every figure next to its baseline in the same run, one table, appended to bench/RESULTS.md.
// Usage: npm run bench [-- --only health,json_keys,saved_searches,completion,webhooks,broadcast,credits,metrics,memory]
//          [--duration 5] [--connections 16,64]
// `--connections` limits the rows of the authenticated-path figures (saved_searches, completion) to these
// connection counts; `npm run bench:auth` is the authenticated path alone (issue 15 item 6), in minutes.
// Needs a build (npm run build), PostgreSQL and Redis on 127.0.0.1, and pgbench (Debian: postgresql-client).
// The load comes from this process (autocannon); the API, the worker and the baselines are child processes.
import { appendFile, readFile } from 'node:fs/promises';
import { cpus, hostname, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { benchBroadcast } from './broadcast.mjs';
import { benchCompletions } from './completions.mjs';
import { benchCredits, creditRows } from './credits.mjs';
import { benchHealth } from './health.mjs';
import { DEPLOYED_EXTRAS, deployedDatabaseUrl, fakeEmailApi, fakeVectorStore, fmt, freePort, identityProvider, productionNodeArgs, REDIS_URL, ROOT, scratchDatabase, SECRETS, startProcess, withClient } from './lib.mjs';
import { benchJsonKeys } from './json-keys.mjs';
import { benchMetricsOverview } from './metrics-overview.mjs';
import { benchSavedSearches } from './saved-searches.mjs';
import { seedBig } from './seed-big.mjs';
import { benchWebhooks } from './webhooks.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const only = option('only', '')?.split(',').filter(Boolean) ?? [];
const duration = Number(option('duration', '5'));
const connections = option('connections', '')?.split(',').filter(Boolean).map(Number);
const wanted = (name) => only.length === 0 || only.includes(name);
const log = (line) => process.stderr.write(`bench: ${line}\n`);
const EMAIL_API_KEY = 'bench-email-api-key';
const ADMIN_EMAIL = 'bench-admin@example.com';

async function main() {
  const rows = [];
  const memory = { api: [], worker: [] };
  const prefix = `bench${Date.now().toString(36)}`;
  const idp = await identityProvider();
  const email = await fakeEmailApi(EMAIL_API_KEY);
  const vectorStore = await fakeVectorStore();
  const llm = await fakeLlmProcess();
  const apiPort = await freePort();
  const workerPort = await freePort();
  // Deployed configuration (boot refusals active), defaults everywhere else: pool size 10, 8.3 e-mails/s.
  const env = {
    APP_ENV: 'production',
    LOG_LEVEL: 'info',
    COMPANY_LEGAL_NAME: 'Bench GmbH',
    CORS_ORIGINS: 'https://app.example.com',
    PUBLIC_BASE_URL: 'https://app.example.com',
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    PORT: String(apiPort),
    WORKER_PORT: String(workerPort),
    VECTOR_STORE_URL: vectorStore.url,
    IDENTITY_JWKS_URL: idp.jwksUrl,
    IDENTITY_ISSUER: idp.issuer,
    ADMIN_EMAILS: ADMIN_EMAIL,
    EMAIL_PROVIDER: 'resend',
    EMAIL_API_URL: email.url,
    EMAIL_API_KEY,
    EMAIL_FROM: 'Bench <news@example.com>',
    LLM_BASE_URL: llm.url,
    LLM_API_KEY: 'bench-llm-api-key',
    // The per-user write limits (120 a minute, bursts of 30) stay in the path but never refuse: the load
    // below is a handful of users writing hundreds of times a second.
    RATE_LIMIT_WRITES_PER_MINUTE: '100000000',
    RATE_LIMIT_WRITES_BURST: '10000000',
    ...DEPLOYED_EXTRAS,
    ...SECRETS,
    // BENCH_ENV_<NAME>=value: a setting of the service for an experiment (recorded in the results' header).
    ...Object.fromEntries(
      Object.entries(process.env)
        .filter(([key]) => key.startsWith('BENCH_ENV_'))
        .map(([key, value]) => [key.slice('BENCH_ENV_'.length), value]),
    ),
  };
  const db = await scratchDatabase('run');
  const ctx = {
    apiUrl: `http://127.0.0.1:${apiPort}`,
    workerUrl: `http://127.0.0.1:${workerPort}`,
    env: { ...env, DATABASE_URL: await deployedDatabaseUrl(db.url) },
    db,
    idp,
    email,
    duration,
    adminEmail: ADMIN_EMAIL,
  };
  const figure = async (name, fn) => {
    if (!wanted(name)) return;
    log(`${name}...`);
    const started = performance.now();
    await fn();
    log(`${name} took ${fmt((performance.now() - started) / 1000, 0)} s`);
  };
  let api;
  try {
    // Its own metrics port (this API only): the memory row reads V8's heap figures from it.
    const metricsPort = await freePort();
    api = await startProcess(join(ROOT, 'dist', 'main.js'), { ...ctx.env, METRICS_PORT: String(metricsPort) }, { readyUrl: `${ctx.apiUrl}/health/ready` });
    ctx.apiPid = api.child.pid;
    await figure('health', async () => rows.push(...(await benchHealth(ctx))));
    await figure('json_keys', async () => rows.push(...(await benchJsonKeys(ctx))));
    const picked = connections?.length ? { connections } : {};
    await figure('saved_searches', async () => rows.push(...(await benchSavedSearches(ctx, picked))));
    await figure('completion', async () => rows.push(...(await benchCompletions(ctx, picked))));
    await figure('webhooks', async () => {
      // The worker applies the accepted events (and sends the welcome e-mails the created ones enqueue).
      // With `npm run start:worker`'s flags (the API's were used here before 2026-11-28).
      const startWorker = () =>
        startProcess(join(ROOT, 'dist', 'worker.js'), ctx.env, { readyUrl: `${ctx.workerUrl}/health`, args: productionNodeArgs('start:worker') });
      let worker = await startWorker();
      // SIGKILL mid-run, then a new worker process: what a crashed or evicted worker looks like.
      const killWorker = async () => {
        const exited = new Promise((resolve) => worker.child.once('exit', resolve));
        worker.child.kill('SIGKILL');
        await exited;
        worker = await startWorker();
      };
      // Stopped and started again: a backlog accepted while no worker runs, then applied by the worker alone.
      let stopped = false;
      const stopWorker = async () => {
        stopped = true;
        memory.worker.push(['worker after webhook ingest', await worker.rssMb()]);
        await worker.stop();
        worker = null;
      };
      const restartWorker = async () => {
        worker = await startWorker();
        return worker.child.pid;
      };
      try {
        const workerPid = () => worker?.child.pid;
        rows.push(...(await benchWebhooks({ ...ctx, killWorker, stopWorker, restartWorker, workerPid })));
      } finally {
        if (worker) {
          memory.worker.push([stopped ? 'worker after the backlog' : 'worker after webhook ingest', await worker.rssMb()]);
          await worker.stop();
        }
      }
    });
    await figure('broadcast', async () => {
      const result = await benchBroadcast(ctx);
      rows.push(...result.rows);
      memory.worker.push(['worker after the broadcasts', result.workerRssMb]);
    });
    const apiRss = await api.rssMb();
    memory.api.push([`API after the load above${await heapText(`http://127.0.0.1:${metricsPort}/metrics`)}`, apiRss]);
    memory.api.push(['API peak under the load above', await api.peakRssMb()]);
    log(`API RSS ${fmt(await api.rssMb())} MB, peak ${fmt(await api.peakRssMb())} MB (node ${productionNodeArgs().join(' ')})`);
  } finally {
    await api?.stop();
  }
  try {
    await figure('credits', async () => rows.push(...creditRows(await benchCredits())));
    await figure('metrics', async () => {
      const big = await scratchDatabase('metrics');
      try {
        log('seeding 100k users, 1M audit rows, ... (about 90 s)');
        await seedBig(big.url, (line) => log(line.trim()));
        const result = await benchMetricsOverview({ url: big.url, idp, env: ctx.env, log });
        rows.push(...result.rows);
        memory.api.push(['API after the metrics requests', result.apiRssMb]);
      } finally {
        await big.drop();
      }
    });
    await figure('memory', async () => {
      for (const [kind, samples] of Object.entries(memory)) {
        if (samples.length === 0) continue;
        const peak = Math.max(...samples.map(([, mb]) => mb));
        rows.push({
          figure: `${kind === 'api' ? 'API' : 'worker'} RSS after load`,
          value: samples.map(([what, mb]) => `${what}: ${fmt(mb)} MB`).join('; '),
          baseline: '-',
          ratio: NaN,
          // Issue 15's bound for API and worker; release 0.1's own target was < 200 MB (bench/RESULTS.md).
          goal: '< 256 MB (issue 15)',
          met: peak < 256,
        });
      }
      rows.push(await coldStart(ctx.env));
    });
  } finally {
    await db.drop();
    await Promise.allSettled([idp.close(), email.close(), vectorStore.close(), llm.close(), cleanupRedis(prefix)]);
  }
  await report(rows);
}

/** API cold start: process spawn to /health/ready 200 (database and Redis answering), best of 3. */
async function coldStart(baseEnv) {
  const samples = [];
  for (let i = 0; i < 3; i += 1) {
    const port = await freePort();
    const started = await startProcess(join(ROOT, 'dist', 'main.js'), { ...baseEnv, PORT: String(port), LOG_LEVEL: 'warn' }, {
      readyUrl: `http://127.0.0.1:${port}/health/ready`,
    });
    await started.stop();
    samples.push(started.readyMs);
  }
  const ms = Math.min(...samples);
  return {
    figure: 'API cold start to ready (spawn to /health/ready 200)',
    value: `${fmt(ms, 0)} ms (best of 3: ${samples.map((s) => fmt(s, 0)).join(', ')} ms)`,
    baseline: '-',
    ratio: NaN,
    goal: '< 3000 ms',
    met: ms < 3000,
  };
}

/** The tests' model stub in its own process (bench/fake-llm.mjs): its base URL, and close(). */
async function fakeLlmProcess() {
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'fake-llm.mjs')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const [url] = await Promise.race([
    (async () => {
      for await (const line of createInterface({ input: child.stdout })) return [line.trim()];
      throw new Error('bench/fake-llm.mjs ended without printing its URL');
    })(),
    exited.then((code) => Promise.reject(new Error(`bench/fake-llm.mjs exited with ${code}`))),
  ]);
  return {
    url,
    async close() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Where an API's RSS goes, from its own /metrics (prom-client's process metrics): " (V8 heap ..., ...)". */
async function heapText(url) {
  try {
    const text = await (await fetch(url)).text();
    const mb = (name, labels = '') => Number(new RegExp(`^${name}\\{${labels}[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1]) / 2 ** 20;
    return (
      ` (V8 heap ${fmt(mb('nodejs_heap_size_used_bytes'))} MB used of ${fmt(mb('nodejs_heap_size_total_bytes'))} MB, ` +
      `of which new space ${fmt(mb('nodejs_heap_space_size_total_bytes', 'space="new"'))} MB; ` +
      `external ${fmt(mb('nodejs_external_memory_bytes'))} MB)`
    );
  } catch {
    return '';
  }
}

async function cleanupRedis(prefix) {
  const redis = new Redis(REDIS_URL);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  redis.disconnect();
}

async function report(rows) {
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
  const cpu = cpus();
  const pgVersion = await withClient('postgresql://postgres@127.0.0.1:5432/postgres', async (c) => (await c.query('SHOW server_version')).rows[0].server_version).catch(() => '?');
  const redis = new Redis(REDIS_URL);
  const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  redis.disconnect();
  const overrides = Object.entries(process.env)
    .filter(([key]) => key.startsWith('BENCH_ENV_'))
    .map(([key, value]) => `${key.slice('BENCH_ENV_'.length)}=${value}`);
  const header = [
    `## ${new Date().toISOString()}`,
    '',
    `Machine: ${hostname()}, ${cpu.length} x ${cpu[0]?.model ?? 'cpu'}, ${fmt(totalmem() / 2 ** 30, 0)} GiB, Linux ${release()}; ` +
      `Node ${process.version}; NestJS ${pkg.dependencies['@nestjs/core']}, Prisma ${pkg.dependencies['@prisma/client']}, ` +
      `PostgreSQL ${pgVersion} and Redis ${redisVersion} on the same machine; load from a separate process (autocannon), ` +
      `${duration} s per run; load average at the end ${loadavg().map((n) => n.toFixed(1)).join(' ')}.`,
    ...(overrides.length ? ['', `Service settings changed for this run: ${overrides.join(', ')}.`] : []),
    '',
    '| figure | ours | baseline (same run) | ratio | goal | met |',
    '|---|---|---|---|---|---|',
  ];
  const lines = rows.map(
    (r) => `| ${r.figure} | ${r.value} | ${r.baseline} | ${Number.isFinite(r.ratio) ? `${fmt(r.ratio, 2)}x` : '-'} | ${r.goal} | ${typeof r.met === 'string' ? r.met : r.met ? 'yes' : '**no**'} |`,
  );
  const text = [...header, ...lines, ''].join('\n');
  process.stdout.write(`${text}\n`);
  await appendFile(join(ROOT, 'bench', 'RESULTS.md'), `\n${text}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
    process.exit(1);
  },
);
