// GET /api/v1/admin/metrics/overview on the big seed (bench/seed-big.mjs: 100k users, 1M audit rows, 200k
// credit rows, 20k subscriptions, 500k broadcast recipients, ...) through the compiled API with an admin's
// RS256 token: p95 of 50 sequential requests after 5 warm-ups, next to the same SQL statements sent by a
// plain `pg` pool (all at once, as the service does), plus the query plan of every overview and stats
// query (no sequential scan of audit_logs, credit_transactions or broadcast_recipients).
//
// Part of `npm run bench` (bench/run.mjs). Standalone on an already seeded database:
//   BENCH_DATABASE_URL=postgresql://.../db node bench/metrics-overview.mjs   (after npm run build)
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { DEPLOYED_EXTRAS, deployedDatabaseUrl, freePort, identityProvider, percentile, REDIS_URL, ROOT, SECRETS, startProcess } from './lib.mjs';

export const GOAL_P95_MS = 300;
export const LEAD_MAGNETS = 'lead_magnet:lm_,ebook:lm_ebook_,webinar:lm_webinar';
/** Tables that must never be read by a sequential scan on these endpoints. */
const NO_SEQ_SCAN = ['audit_logs', 'credit_transactions', 'broadcast_recipients'];
/** Big tables whose sequential scans are reported (consent rate and activity read every live user in one pass). */
const WATCHED = ['users', 'email_messages', 'payments', 'subscriptions', 'webhook_events'];
const REQUESTS = 50;
const dist = (path) => import(pathToFileURL(join(ROOT, 'dist', path)).href);

function planNodes(node, out = []) {
  out.push(node);
  for (const child of node.Plans ?? []) planNodes(child, out);
  return out;
}

/** Stand-in for PrismaService: hands every raw query of the repositories to `onQuery(text, values)`. */
async function capturing(onQuery) {
  const { Prisma } = await dist('generated/prisma/client.js');
  return {
    $queryRaw: async (strings, ...values) => {
      const sql = Prisma.sql(strings, ...values);
      return onQuery(sql.text, sql.values);
    },
  };
}

/** The overview's queries exactly as the repositories send them, bound to `db` (a PrismaService stand-in). */
async function overviewQueries(db) {
  const { windowsEndingAt } = await dist('modules/admin/metrics/metric-windows.js');
  const { RevenueMetricsRepository } = await dist('modules/admin/metrics/revenue-metrics.repository.js');
  const { MailingMetricsRepository } = await dist('modules/admin/metrics/mailing-metrics.repository.js');
  const { UserMetricsRepository } = await dist('modules/admin/metrics/user-metrics.repository.js');
  const { AdminStatsRepository } = await dist('modules/admin/metrics/admin-stats.repository.js');
  const revenue = new RevenueMetricsRepository(db);
  const mailing = new MailingMetricsRepository(db);
  const users = new UserMetricsRepository(db);
  const stats = new AdminStatsRepository(db);
  const w = windowsEndingAt(new Date());
  const prefixes = LEAD_MAGNETS.split(',').map((pair) => pair.split(':')[1]);
  return {
    overview: {
      'revenue: subscription groups': () => revenue.subscriptionGroups(w),
      'revenue: payments + refunds 30d': () => revenue.moneyLast30Days(w),
      'mailing: e-mail counts': () => mailing.emailCounts(w),
      'mailing: unsubscribed': () => mailing.unsubscribed(w),
      'mailing: last broadcast': () => mailing.lastBroadcast(w),
      'live users: consent + dau/wau/mau': () => users.liveUsers(w),
      'acquisition: signups by source': () => users.signupsBySource(w),
      'lead magnets (3 prefixes)': () => users.leadMagnets(w, prefixes),
    },
    stats: {
      'stats: table estimates': () => stats.tableEstimates(),
      'stats: webhook archive': () => stats.webhookCounts(new Date(Date.now() - 86_400_000)),
      'stats: outbox': () => stats.outbox(),
    },
  };
}

/** EXPLAIN ANALYZE of every overview and stats query; returns the sequential scans of the big tables. */
async function explainAll(client, log) {
  let lastPlan;
  const db = await capturing(async (text, values) => {
    // TIMING OFF: per-node clock reads would inflate the total on a busy machine.
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ${text}`, values);
    lastPlan = rows[0]['QUERY PLAN'][0];
    // Shaped like a one-row result set; the repositories' mapping of it is ignored.
    return [lastPlan];
  });
  const { overview, stats } = await overviewQueries(db);
  const violations = [];
  const watched = [];
  log('query plans (EXPLAIN ANALYZE, warm cache):');
  for (const [name, run] of Object.entries({ ...overview, ...stats })) {
    await run(); // warm the cache first, as the API's repeated requests do
    await run();
    const plan = lastPlan;
    const nodes = planNodes(plan.Plan);
    const scans = nodes
      .filter((n) => n['Relation Name'])
      .map((n) => `${n['Node Type']} ${n['Relation Name']}${n['Index Name'] ? ` (${n['Index Name']})` : ''}`);
    for (const n of nodes) {
      if (n['Node Type'] !== 'Seq Scan') continue;
      if (NO_SEQ_SCAN.includes(n['Relation Name'])) violations.push(`${name}: Seq Scan on ${n['Relation Name']}`);
      if (WATCHED.includes(n['Relation Name'])) watched.push(`${name}: Seq Scan on ${n['Relation Name']}`);
    }
    log(`  ${name.padEnd(34)} ${plan['Execution Time'].toFixed(1).padStart(7)} ms  ${[...new Set(scans)].join('; ')}${plan.JIT ? '  JIT!' : ''}`);
  }
  if (watched.length > 0) log(`  sequential scans of watched tables (by design, see RESULTS-admin-metrics.md):\n    ${watched.join('\n    ')}`);
  return violations;
}

/** Baseline: the overview's SQL statements, sent all at once by a plain pg pool; p95 of `REQUESTS` rounds. */
async function plainSql(url, poolSize) {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, options: '-c jit=off' });
  pool.on('error', () => {});
  try {
    const db = await capturing(async (text, values) => (await pool.query(text, values)).rows);
    const { overview } = await overviewQueries(db);
    const round = () => Promise.all(Object.values(overview).map((run) => run().catch(() => null)));
    for (let i = 0; i < 5; i += 1) await round();
    const samples = [];
    for (let i = 0; i < REQUESTS; i += 1) {
      const started = performance.now();
      await round();
      samples.push(performance.now() - started);
    }
    return samples.sort((a, b) => a - b);
  } finally {
    await pool.end();
  }
}

async function throughApi({ url, idp, env }) {
  const port = await freePort();
  const api = await startProcess(join(ROOT, 'dist', 'main.js'), { ...env, PORT: String(port), DATABASE_URL: await deployedDatabaseUrl(url), LEAD_MAGNET_PREFIXES: LEAD_MAGNETS }, {
    readyUrl: `http://127.0.0.1:${port}/health/ready`,
    timeoutMs: 60_000,
  });
  try {
    const get = async () => {
      // A fresh token per request: the run outlives nothing, but a token per call is what a dashboard sends.
      const token = await idp.token('user_bench_admin', env.ADMIN_EMAILS.split(',')[0]);
      const started = performance.now();
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/admin/metrics/overview`, { headers: { authorization: `Bearer ${token}` } });
      const body = await res.json();
      if (res.status !== 200) throw new Error(`overview answered ${res.status}: ${JSON.stringify(body)}`);
      return performance.now() - started;
    };
    for (let i = 0; i < 5; i += 1) await get(); // pool, plan caches, the admin's just-in-time row
    const samples = [];
    for (let i = 0; i < REQUESTS; i += 1) samples.push(await get());
    return { samples: samples.sort((a, b) => a - b), rss: await api.rssMb() };
  } finally {
    await api.stop();
  }
}

/** ctx: { url (seeded), idp, env (API environment, ADMIN_EMAILS set), log }. */
export async function benchMetricsOverview(ctx) {
  const log = ctx.log ?? ((line) => process.stderr.write(`${line}\n`));
  const client = new pg.Client({ connectionString: ctx.url });
  await client.connect();
  let violations;
  try {
    violations = await explainAll(client, log);
  } finally {
    await client.end();
  }
  const api = await throughApi(ctx);
  const sql = await plainSql(ctx.url, Number(ctx.env.DATABASE_POOL_SIZE ?? 10));
  const p95 = percentile(api.samples, 95);
  const sqlP95 = percentile(sql, 95);
  return {
    rows: [
      {
        figure: `GET /api/v1/admin/metrics/overview on the big seed, p95 of ${REQUESTS} sequential`,
        value: `p50 ${percentile(api.samples, 50).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms; ${violations.length === 0 ? 'no sequential scan of audit_logs, credit_transactions, broadcast_recipients' : violations.join('; ')}`,
        baseline: `same SQL via plain pg: p50 ${percentile(sql, 50).toFixed(0)} ms, p95 ${sqlP95.toFixed(0)} ms`,
        // Inverted so that >1 means faster than the baseline, like every other ratio in the table.
        ratio: sqlP95 / p95,
        goal: `p95 < ${GOAL_P95_MS} ms`,
        met: p95 < GOAL_P95_MS && violations.length === 0,
      },
    ],
    apiRssMb: api.rss,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const url = process.env.BENCH_DATABASE_URL;
  if (!url) {
    console.error('set BENCH_DATABASE_URL to a database seeded by bench/seed-big.mjs');
    process.exit(2);
  }
  const idp = await identityProvider();
  const env = {
    APP_ENV: 'production',
    LOG_LEVEL: 'warn',
    COMPANY_LEGAL_NAME: 'Bench GmbH',
    CORS_ORIGINS: 'https://app.example.com',
    PUBLIC_BASE_URL: 'https://app.example.com',
    REDIS_URL,
    REDIS_KEY_PREFIX: `benchmo${Date.now().toString(36)}`,
    IDENTITY_JWKS_URL: idp.jwksUrl,
    IDENTITY_ISSUER: idp.issuer,
    ADMIN_EMAILS: 'admin@example.com',
    EMAIL_PROVIDER: 'resend',
    EMAIL_API_KEY: 'bench-email-api-key',
    ...DEPLOYED_EXTRAS,
    ...SECRETS,
  };
  try {
    const { rows } = await benchMetricsOverview({ url, idp, env });
    console.log(rows);
  } finally {
    await idp.close();
  }
  process.exit(0);
}
