// npm run bench: every figure next to its baseline in the same run, one table, appended to RESULTS.md.
// Usage: npm run bench [-- --only health,memory] [--duration 5]
import { appendFile, readFile } from 'node:fs/promises';
import { cpus, totalmem, hostname, release } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { benchHealth } from './health.mjs';
import { fmt, freePort, REDIS_URL, ROOT, scratchDatabase, SECRETS, startProcess } from './lib.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const only = option('only', '')?.split(',').filter(Boolean) ?? [];
const duration = Number(option('duration', '5'));
const wanted = (name) => only.length === 0 || only.includes(name);

const FIGURES = [['health', benchHealth]];

async function main() {
  const db = await scratchDatabase('run');
  const apiPort = await freePort();
  const workerPort = await freePort();
  const prefix = `bench${Date.now().toString(36)}`;
  const env = {
    APP_ENV: 'production',
    LOG_LEVEL: 'info',
    COMPANY_LEGAL_NAME: 'Bench GmbH',
    CORS_ORIGINS: 'https://app.example.com',
    PUBLIC_BASE_URL: 'https://api.example.com',
    DATABASE_URL: db.url,
    DATABASE_POOL_SIZE: '20',
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    PORT: String(apiPort),
    WORKER_PORT: String(workerPort),
    ...SECRETS,
  };
  const api = await startProcess(join(ROOT, 'dist', 'main.js'), env, { readyUrl: `http://127.0.0.1:${apiPort}/health` });
  const worker = await startProcess(join(ROOT, 'dist', 'worker.js'), env, {
    readyUrl: `http://127.0.0.1:${workerPort}/health`,
  });
  const ctx = { apiUrl: `http://127.0.0.1:${apiPort}`, workerUrl: `http://127.0.0.1:${workerPort}`, env, db, duration };
  const rows = [];
  try {
    for (const [name, figure] of FIGURES) {
      if (!wanted(name)) continue;
      process.stderr.write(`bench: ${name}...\n`);
      rows.push(...(await figure(ctx)));
    }
    if (wanted('memory')) {
      const apiRss = await api.rssMb();
      const workerRss = await worker.rssMb();
      rows.push(
        { figure: 'API RSS after load', value: `${fmt(apiRss)} MB`, baseline: '-', ratio: NaN, goal: '< 200 MB', met: apiRss < 200 },
        { figure: 'worker RSS after load', value: `${fmt(workerRss)} MB`, baseline: '-', ratio: NaN, goal: '< 200 MB', met: workerRss < 200 },
      );
      rows.push(await coldStart(env));
    }
  } finally {
    await api.stop();
    await worker.stop();
    await db.drop();
    await cleanupRedis(prefix);
  }
  await report(rows);
}

/** API cold start: process spawn to /health/ready 200 (database and Redis answering). */
async function coldStart(baseEnv) {
  const port = await freePort();
  const env = { ...baseEnv, PORT: String(port), APP_ENV: 'development', LOG_LEVEL: 'warn' };
  const started = await startProcess(join(ROOT, 'dist', 'main.js'), env, { readyUrl: `http://127.0.0.1:${port}/health/ready` });
  await started.stop();
  const ms = started.readyMs;
  return { figure: 'API cold start to ready', value: `${fmt(ms, 0)} ms`, baseline: '-', ratio: NaN, goal: '< 3000 ms', met: ms < 3000 };
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
  const header = [
    `## ${new Date().toISOString()}`,
    '',
    `Machine: ${hostname()}, ${cpu.length} x ${cpu[0]?.model ?? 'cpu'}, ${fmt(totalmem() / 2 ** 30, 0)} GiB, Linux ${release()}; ` +
      `Node ${process.version}; NestJS ${pkg.dependencies['@nestjs/core']}, Prisma ${pkg.dependencies['@prisma/client']}, ` +
      `PostgreSQL/Redis local; load from a separate process (autocannon), ${duration} s per run.`,
    '',
    '| figure | ours | baseline (same run) | ratio | goal | met |',
    '|---|---|---|---|---|---|',
  ];
  const lines = rows.map(
    (r) => `| ${r.figure} | ${r.value} | ${r.baseline} | ${Number.isFinite(r.ratio) ? `${fmt(r.ratio, 2)}x` : '-'} | ${r.goal} | ${r.met ? 'yes' : '**no**'} |`,
  );
  const text = [...header, ...lines, ''].join('\n');
  process.stdout.write(`${text}\n`);
  await appendFile(join(ROOT, 'bench', 'RESULTS.md'), `\n${text}`);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
  process.exit(1);
});
