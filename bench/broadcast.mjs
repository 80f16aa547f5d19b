// Broadcast throughput: a 10,000-recipient marketing broadcast through the compiled worker (dist/)
// against a local Resend-shaped e-mail API, once without a ceiling and once with the default ceiling
// (8.3 requests/s, 100 recipients per batch request). Reports recipients/s and the worker's peak heap.
// Usage: npm run build && node bench/broadcast.mjs [--recipients 10000]
// Goal: >= 1,000 recipients/s without a ceiling; with the default ceiling the provider limit rules
// (at most 830 recipients/s).
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { writeFile, mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import pg from 'pg';
import { deploy } from '../scripts/migrate.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PG_SERVER = process.env.BENCH_PG_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const API_KEY = 'bench-email-api-key';

const dist = (path) => {
  const file = join(ROOT, 'dist', path);
  if (!existsSync(file)) throw new Error(`${file} is missing (run npm run build)`);
  return import(pathToFileURL(file).href);
};

/** A minimal Resend-shaped API: `POST /emails/batch` -> `{data: [{id}]}`; counts what it delivers. */
async function fakeEmailApi() {
  const stats = { requests: 0, delivered: 0, addresses: new Set() };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      stats.requests += 1;
      if (req.headers.authorization !== `Bearer ${API_KEY}`) return void res.writeHead(401).end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const messages = Array.isArray(body) ? body : [body];
      for (const m of messages) stats.addresses.add(m.to[0]);
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
    },
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
  };
}

async function seedUsers(url, count) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(
    `INSERT INTO users (id, identity_user_id, email, marketing_consent_given, marketing_consent_at, marketing_consent_source)
     SELECT gen_random_uuid(), 'user_bench_' || i, 'bench-' || i || '@example.com', true, now(), 'bench'
     FROM generate_series(1, $1) AS i`,
    [count],
  );
  const { rows } = await client.query(
    `INSERT INTO users (id, identity_user_id, email) VALUES (gen_random_uuid(), 'user_bench_admin', 'admin@example.com')
     RETURNING id`,
  );
  await client.end();
  return rows[0].id;
}

/** One broadcast through the real path: create (run + audit + outbox) -> BullMQ -> processor -> done. */
async function runScenario({ name, env, recipients, email, adminId }) {
  const [{ WorkerModule }, { loadConfig }, { BroadcastsService }, { PrismaService }] = await Promise.all([
    dist('app/worker.module.js'),
    dist('config/env.js'),
    dist('modules/broadcasts/broadcasts.service.js'),
    dist('infra/prisma/prisma.service.js'),
  ]);
  const config = loadConfig(env);
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config, { schedule: false }), {
    logger: false,
  });
  await app.init();
  email.reset();
  let peakHeap = process.memoryUsage().heapUsed;
  const sampler = setInterval(() => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)), 50);
  try {
    const prisma = app.get(PrismaService);
    const admin = await prisma.user.findUniqueOrThrow({ where: { id: adminId } });
    const started = performance.now();
    const created = await app
      .get(BroadcastsService)
      .create(admin, { template_key: 'newsletter', audience: {} });
    let run;
    for (;;) {
      run = await prisma.broadcastRun.findUniqueOrThrow({ where: { id: created.id } });
      if (run.status === 'done' || run.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    if (run.status !== 'done' || run.sentCount !== recipients || email.stats.addresses.size !== recipients) {
      throw new Error(
        `${name}: run ${run.status}, sent ${run.sentCount}, delivered to ${email.stats.addresses.size}`,
      );
    }
    return {
      scenario: name,
      recipients,
      seconds: Number(seconds.toFixed(2)),
      recipients_per_second: Math.round(recipients / seconds),
      provider_requests: email.stats.requests,
      provider_requests_per_second: Number((email.stats.requests / seconds).toFixed(2)),
      peak_heap_mb: Math.round(peakHeap / 1024 / 1024),
    };
  } finally {
    clearInterval(sampler);
    await app.close();
  }
}

export async function benchBroadcast({ recipients = 10_000 } = {}) {
  const name = `bench_broadcast_${randomBytes(3).toString('hex')}`;
  const url = `${PG_SERVER}/${name}`;
  const prefix = `benchbc${randomBytes(3).toString('hex')}`;
  await deploy({ databaseUrl: url });
  const email = await fakeEmailApi();
  const results = [];
  try {
    const adminId = await seedUsers(url, recipients);
    const env = {
      APP_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: url,
      DATABASE_POOL_SIZE: '10',
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      ADMIN_EMAILS: 'admin@example.com',
      EMAIL_PROVIDER: 'resend',
      EMAIL_API_URL: email.url,
      EMAIL_API_KEY: API_KEY,
      EMAIL_UNSUBSCRIBE_SECRET: 'unsubscribe-secret-for-bench-0123456789abcdef',
      PUBLIC_BASE_URL: 'https://app.example.com',
    };
    for (const [label, ceiling] of [
      ['no ceiling', '1000000'],
      ['default ceiling (8.3 req/s)', undefined],
    ]) {
      const scenarioEnv = ceiling ? { ...env, EMAIL_MAX_REQUESTS_PER_SECOND: ceiling } : env;
      results.push(await runScenario({ name: label, env: scenarioEnv, recipients, email, adminId }));
    }
  } finally {
    await email.close();
    const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await client.end();
    const redis = new Redis(REDIS_URL);
    for await (const keys of redis.scanStream({ match: `${prefix}:*`, count: 500 }))
      if (keys.length) await redis.del(...keys);
    redis.disconnect();
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const at = process.argv.indexOf('--recipients');
  const recipients = at >= 0 ? Number(process.argv[at + 1]) : 10_000;
  const results = await benchBroadcast({ recipients });
  const report = { at: new Date().toISOString(), node: process.version, loadavg_1m: loadavg()[0], results };
  console.table(results);
  const noCeiling = results.find((r) => r.scenario === 'no ceiling');
  console.log(
    `goal >= 1000 recipients/s without a ceiling: ${noCeiling.recipients_per_second >= 1000 ? 'met' : 'NOT met'}`,
  );
  await mkdir(join(ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(join(ROOT, 'bench', 'results', 'broadcast.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.exit(0);
}
