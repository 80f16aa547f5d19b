// Latency of GET /api/v1/admin/metrics/overview against the big seed (bench/seed-big.mjs), through the
// compiled API (`npm run build` first), plus the query plans of every overview and stats query.
// Standalone (not part of jest).
//
//   node bench/metrics-overview.mjs [--requests 50] [--drop]
//
// Database: BENCH_DATABASE_URL, else the URL bench/seed-big.mjs wrote to bench/.tmp/metrics-db-url.
// --drop drops that database at the end. Redis: REDIS_URL (default local) with a private key prefix.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const GOAL_P95_MS = 300;
const LEAD_MAGNETS = 'lead_magnet:lm_,ebook:lm_ebook_,webinar:lm_webinar';
/** Tables that must never be read by a sequential scan on these endpoints. */
const NO_SEQ_SCAN = ['audit_logs', 'credit_transactions', 'broadcast_recipients'];
/** Big tables whose sequential scans are reported (consent rate and activity read every live user in one pass). */
const WATCHED = ['users', 'email_messages', 'payments', 'subscriptions', 'webhook_events'];

const args = process.argv.slice(2);
const requests = Number(args[args.indexOf('--requests') + 1]) || 50;
const databaseUrl =
  process.env.BENCH_DATABASE_URL ??
  (await readFile(join(ROOT, 'bench', '.tmp', 'metrics-db-url'), 'utf8').catch(() => '')).trim();
if (!databaseUrl) {
  console.error('no database: run node bench/seed-big.mjs first (or set BENCH_DATABASE_URL)');
  process.exit(1);
}
const dist = (path) => import(pathToFileURL(join(ROOT, 'dist', path)).href);

const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

function planNodes(node, out = []) {
  out.push(node);
  for (const child of node.Plans ?? []) planNodes(child, out);
  return out;
}

/** EXPLAIN ANALYZE of the exact SQL the repositories send: a stand-in client captures each query. */
async function explainAll(client) {
  const { Prisma } = await dist('generated/prisma/client.js');
  const { windowsEndingAt } = await dist('modules/admin/metrics/metric-windows.js');
  const { RevenueMetricsRepository } = await dist('modules/admin/metrics/revenue-metrics.repository.js');
  const { MailingMetricsRepository } = await dist('modules/admin/metrics/mailing-metrics.repository.js');
  const { UserMetricsRepository } = await dist('modules/admin/metrics/user-metrics.repository.js');
  const { AdminStatsRepository } = await dist('modules/admin/metrics/admin-stats.repository.js');
  let lastPlan;
  const explaining = {
    $queryRaw: async (strings, ...values) => {
      const sql = Prisma.sql(strings, ...values);
      // TIMING OFF: per-node clock reads would inflate the total on a busy machine.
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ${sql.text}`,
        sql.values,
      );
      lastPlan = rows[0]['QUERY PLAN'][0];
      // Shaped like a one-row result set; the repositories' mapping of it is ignored.
      return [lastPlan];
    },
  };
  const revenue = new RevenueMetricsRepository(explaining);
  const mailing = new MailingMetricsRepository(explaining);
  const users = new UserMetricsRepository(explaining);
  const stats = new AdminStatsRepository(explaining);
  const w = windowsEndingAt(new Date());
  const prefixes = LEAD_MAGNETS.split(',').map((pair) => pair.split(':')[1]);
  const queries = {
    'revenue: subscription groups': () => revenue.subscriptionGroups(w),
    'revenue: payments + refunds 30d': () => revenue.moneyLast30Days(w),
    'mailing: e-mail counts': () => mailing.emailCounts(w),
    'mailing: unsubscribed': () => mailing.unsubscribed(w),
    'mailing: last broadcast': () => mailing.lastBroadcast(w),
    'live users: consent + dau/wau/mau': () => users.liveUsers(w),
    'acquisition: signups by source': () => users.signupsBySource(w),
    'lead magnets (3 prefixes)': () => users.leadMagnets(w, prefixes),
    'stats: table estimates': () => stats.tableEstimates(),
    'stats: webhook archive': () => stats.webhookCounts(new Date(Date.now() - 86_400_000)),
    'stats: outbox': () => stats.outbox(),
  };
  const violations = [];
  const watched = [];
  console.log('\nquery plans (EXPLAIN ANALYZE, warm cache):');
  for (const [name, run] of Object.entries(queries)) {
    await run(); // warm the cache first, as the API's repeated requests do
    await run();
    const plan = lastPlan;
    const nodes = planNodes(plan.Plan);
    const scans = nodes
      .filter((n) => n['Relation Name'])
      .map((n) => `${n['Node Type']} ${n['Relation Name']}${n['Index Name'] ? ` (${n['Index Name']})` : ''}`);
    for (const n of nodes) {
      if (n['Node Type'] !== 'Seq Scan') continue;
      if (NO_SEQ_SCAN.includes(n['Relation Name']))
        violations.push(`${name}: Seq Scan on ${n['Relation Name']}`);
      if (WATCHED.includes(n['Relation Name'])) watched.push(`${name}: Seq Scan on ${n['Relation Name']}`);
    }
    const jit = plan.JIT ? '  JIT!' : '';
    console.log(
      `  ${name.padEnd(34)} ${plan['Execution Time'].toFixed(1).padStart(7)} ms  ${[...new Set(scans)].join('; ')}${jit}`,
    );
  }
  if (watched.length > 0) console.log(`  sequential scans of watched tables:\n    ${watched.join('\n    ')}`);
  return violations;
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

async function waitForHealth(base, child) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the API exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the API did not become healthy within 30 s');
}

async function measure() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--enable-source-maps', join(ROOT, 'dist', 'main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      APP_ENV: 'development',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `bench${randomBytes(3).toString('hex')}`,
      // Development-only bypass token (refused at boot when deployed): no identity provider needed here.
      TESTING: '1',
      ADMIN_EMAILS: 'admin@example.com',
      LEAD_MAGNET_PREFIXES: LEAD_MAGNETS,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await waitForHealth(base, child);
    const headers = { Authorization: 'Bearer test:user_admin:admin@example.com' };
    const get = async () => {
      const started = performance.now();
      const res = await fetch(`${base}/api/v1/admin/metrics/overview`, { headers });
      const body = await res.json();
      if (res.status !== 200) throw new Error(`overview answered ${res.status}: ${JSON.stringify(body)}`);
      return { ms: performance.now() - started, res, body };
    };
    for (let i = 0; i < 5; i += 1) await get(); // connection pool, JIT admin row, plan caches
    const samples = [];
    let last;
    for (let i = 0; i < requests; i += 1) {
      last = await get();
      samples.push(last.ms);
    }
    samples.sort((a, b) => a - b);
    const p50 = percentile(samples, 50);
    const p95 = percentile(samples, 95);
    console.log(`\nGET /api/v1/admin/metrics/overview x ${requests} (sequential, after 5 warm-ups):`);
    console.log(
      `  p50 ${p50.toFixed(1)} ms   p95 ${p95.toFixed(1)} ms   max ${samples.at(-1).toFixed(1)} ms   goal p95 < ${GOAL_P95_MS} ms: ${p95 < GOAL_P95_MS ? 'met' : `MISSED by ${(p95 - GOAL_P95_MS).toFixed(0)} ms`}`,
    );
    console.log(`  Cache-Control: ${last.res.headers.get('cache-control')}`);
    const { revenue, activity, acquisition, lead_magnet: lead } = last.body;
    console.log(
      `  sample: MRR USD ${revenue.mrr.USD?.total}, subscriptions ${revenue.subscriptions.total}, ` +
        `MAU ${activity.mau}, signups 30d ${acquisition.last_30_days.signups}, lead-magnet signups ${lead.signups}`,
    );
    return p95;
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
  }
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

async function main() {
  console.log(`database: ${databaseUrl}`);
  console.log(`machine: ${cpus().length} cores, load average ${load()} (other processes share it)`);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let violations;
  try {
    const { rows } = await client.query(
      `SELECT relname, n_live_tup::bigint AS n FROM pg_stat_user_tables
       WHERE relname IN ('users','audit_logs','credit_transactions','subscriptions','broadcast_recipients',
                         'email_messages','payments') ORDER BY relname`,
    );
    console.log(`rows: ${rows.map((r) => `${r.relname} ${r.n}`).join(', ')}`);
    violations = await explainAll(client);
  } finally {
    await client.end();
  }
  const p95 = await measure();
  console.log(`  load average after: ${load()}`);
  if (violations.length > 0) console.log(`\nsequential scans of big tables:\n  ${violations.join('\n  ')}`);
  else console.log(`\nno sequential scan of ${NO_SEQ_SCAN.join(', ')}`);

  if (args.includes('--drop')) {
    const name = new URL(databaseUrl).pathname.slice(1);
    const admin = new pg.Client({ connectionString: databaseUrl.replace(/\/[^/]+$/, '/postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
    console.log(`dropped ${name}`);
  }
  return p95 < GOAL_P95_MS && violations.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
