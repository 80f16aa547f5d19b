// Seeds a scratch database at production-like volume for the admin metrics benchmark:
// 100k users, 1M audit rows, 200k credit rows, 20k subscriptions, 500k broadcast recipients, plus
// payments, refunds, e-mail log, consent history and the webhook archive. Standalone (not part of jest).
//
//   node bench/seed-big.mjs                     creates bench_metrics_<random> on the local server
//   BENCH_DATABASE_URL=postgresql://.../db node bench/seed-big.mjs
//
// The database URL is printed and written to bench/.tmp/metrics-db-url for bench/metrics-overview.mjs.
// Drop it afterwards with `node bench/metrics-overview.mjs --drop` (or DROP DATABASE by hand).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { deploy } from '../scripts/migrate.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const server = process.env.BENCH_PG_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432';
const databaseUrl =
  process.env.BENCH_DATABASE_URL ?? `${server}/bench_metrics_${randomBytes(4).toString('hex')}`;

const STEPS = [
  ['random seed', `SELECT setseed(0.42)`],
  [
    'users (100k)',
    `INSERT INTO users (id, identity_user_id, email, current_tier, marketing_consent_given, utm_source,
                        attribution_recorded_at, email_disposable, provenance, last_active_at,
                        created_at, updated_at, deleted_at)
     SELECT gen_random_uuid(), 'bench_' || g, 'user' || g || '@example.com',
            CASE WHEN g <= 20000 THEN (CASE WHEN g % 5 = 0 THEN 'TEAM' ELSE 'PRO' END) ELSE 'FREE' END,
            random() < 0.4,
            CASE WHEN random() < 0.3 THEN NULL ELSE 'source' || floor(power(random(), 2) * 30)::int END,
            CASE WHEN random() < 0.7 THEN c END,
            random() < 0.03,
            CASE WHEN g % 10 = 0 THEN 'lm_ebook_' || (g % 7) WHEN g % 20 = 1 THEN 'lm_webinar'
                 WHEN g % 20 = 3 THEN 'ref_partner' END,
            CASE WHEN random() < 0.6 THEN greatest(c, now() - random() * interval '60 days') END,
            c, c,
            CASE WHEN random() < 0.02 THEN now() - random() * interval '29 days' END
     FROM (SELECT g, now() - random() * interval '730 days' AS c FROM generate_series(1, 100000) g) s`,
  ],
  [
    'user numbering (temp)',
    `CREATE TEMP TABLE bench_users AS
       SELECT row_number() OVER (ORDER BY identity_user_id) AS n, id, identity_user_id FROM users;
     CREATE UNIQUE INDEX ON bench_users (n); ANALYZE bench_users`,
  ],
  [
    'audit_logs (1M)',
    `INSERT INTO audit_logs (id, actor, action, user_id, resource_type, resource_id, details, created_at)
     SELECT gen_random_uuid(), 'user:bench_' || (1 + g % 100000),
            (ARRAY['user.created','email.sent','subscription.created','saved_search.created',
                   'admin.unauthorized'])[1 + g % 5],
            'bench_' || (1 + g % 100000), 'user', g::text, '{}', now() - random() * interval '730 days'
     FROM generate_series(1, 1000000) g`,
  ],
  [
    'credit_transactions (200k)',
    `INSERT INTO credit_transactions (id, user_id, delta, kind, job_id, created_at)
     SELECT gen_random_uuid(), b.id, CASE WHEN g % 4 = 0 THEN 1000 ELSE -(1 + g % 20) END,
            CASE WHEN g % 4 = 0 THEN 'grant' ELSE 'spend' END, 'job-' || g,
            now() - random() * interval '365 days'
     FROM generate_series(1, 200000) g JOIN bench_users b ON b.n = 1 + g % 100000`,
  ],
  [
    'subscriptions (20k)',
    `INSERT INTO subscriptions (id, user_id, provider_subscription_id, provider_customer_id, status, tier,
                                price_id, unit_amount, currency, billing_interval, billing_frequency,
                                quantity, current_period_start, current_period_end, canceled_at,
                                last_event_at, created_at, updated_at)
     SELECT gen_random_uuid(), b.id, 'sub_' || b.n, 'ctm_' || b.n,
            (CASE WHEN r < 0.70 THEN 'ACTIVE' WHEN r < 0.75 THEN 'TRIALING' WHEN r < 0.80 THEN 'PAST_DUE'
                  WHEN r < 0.85 THEN 'PAUSED' ELSE 'CANCELED' END)::"SubscriptionStatus",
            CASE WHEN b.n % 5 = 0 THEN 'TEAM' ELSE 'PRO' END,
            CASE WHEN b.n % 5 = 0 THEN 'pri_team' ELSE 'pri_pro' END,
            (CASE WHEN b.n % 5 = 0 THEN 9900 ELSE 1900 END) * (CASE WHEN b.n % 10 = 1 THEN 10 ELSE 1 END),
            CASE WHEN b.n % 10 = 7 THEN 'EUR' ELSE 'USD' END,
            CASE WHEN b.n % 10 = 1 THEN 'year' ELSE 'month' END, 1, 1 + (b.n % 17 = 0)::int,
            now() - interval '10 days', now() + interval '20 days',
            CASE WHEN r >= 0.85 THEN now() - random() * interval '365 days' END,
            now() - interval '10 days', now() - random() * interval '700 days', now()
     FROM (SELECT b.*, random() AS r FROM bench_users b WHERE b.n <= 20000) b`,
  ],
  [
    'payments (60k)',
    `INSERT INTO payments (id, user_id, provider_transaction_id, provider_subscription_id, status, origin,
                           tier, amount_total, currency, occurred_at)
     SELECT gen_random_uuid(), b.id, 'txn_' || b.n || '_' || k, 'sub_' || b.n,
            CASE WHEN random() < 0.95 THEN 'completed' ELSE 'canceled' END, 'subscription_recurring',
            CASE WHEN b.n % 5 = 0 THEN 'TEAM' ELSE 'PRO' END,
            CASE WHEN b.n % 5 = 0 THEN 9900 ELSE 1900 END,
            CASE WHEN b.n % 10 = 7 THEN 'EUR' ELSE 'USD' END,
            now() - random() * interval '365 days'
     FROM bench_users b CROSS JOIN generate_series(1, 3) k WHERE b.n <= 20000`,
  ],
  [
    'billing_adjustments (2k)',
    `INSERT INTO billing_adjustments (id, user_id, provider_adjustment_id, provider_transaction_id, action,
                                      status, amount_total, currency, occurred_at)
     SELECT gen_random_uuid(), b.id, 'adj_' || b.n, 'txn_' || b.n || '_1',
            CASE WHEN b.n % 10 = 0 THEN 'credit' ELSE 'refund' END,
            CASE WHEN b.n % 7 = 0 THEN 'pending_approval' ELSE 'approved' END, 1900, 'USD',
            now() - random() * interval '365 days'
     FROM bench_users b WHERE b.n % 10 = 3 AND b.n <= 20000`,
  ],
  [
    'broadcast_runs (10)',
    `INSERT INTO broadcast_runs (id, status, template_key, kind, created_by, recipients_total, sent_count,
                                 failed_count, created_at, started_at, finished_at)
     SELECT ('00000000-0000-4000-8000-' || lpad(r::text, 12, '0'))::uuid,
            CASE WHEN r = 10 THEN 'running' ELSE 'done' END::"BroadcastRunStatus", 'newsletter', 'marketing',
            'user:bench_1', 50000, 48500, 1500, now() - (11 - r) * interval '7 days',
            now() - (11 - r) * interval '7 days', CASE WHEN r < 10 THEN now() - (11 - r) * interval '6 days' END
     FROM generate_series(1, 10) r`,
  ],
  [
    'broadcast_recipients (500k)',
    `INSERT INTO broadcast_recipients (id, run_id, user_id, status, created_at)
     SELECT gen_random_uuid(), ('00000000-0000-4000-8000-' || lpad(r::text, 12, '0'))::uuid, b.id,
            (CASE WHEN random() < 0.97 THEN 'sent' ELSE 'failed' END)::"BroadcastRecipientStatus",
            now() - (11 - r) * interval '7 days' + b.n * interval '1 second'
     FROM generate_series(1, 10) r JOIN bench_users b ON b.n <= 50000`,
  ],
  [
    'email_messages (300k)',
    `INSERT INTO email_messages (id, user_id, to_address, template_key, kind, subject, status,
                                 idempotency_key, created_at)
     SELECT gen_random_uuid(), b.id, 'user' || b.n || '@example.com', 'newsletter', 'marketing', 'News',
            CASE WHEN r < 0.92 THEN 'sent' WHEN r < 0.95 THEN 'failed' ELSE 'skipped' END,
            'bench-' || g, now() - random() * interval '90 days'
     FROM (SELECT g, random() AS r FROM generate_series(1, 300000) g) s
     JOIN bench_users b ON b.n = 1 + g % 100000`,
  ],
  [
    'email_consent_events (50k)',
    `INSERT INTO email_consent_events (id, user_id, given, source, created_at)
     SELECT gen_random_uuid(), b.id, g % 3 <> 0, 'settings', now() - random() * interval '365 days'
     FROM generate_series(1, 50000) g JOIN bench_users b ON b.n = 1 + (g * 7) % 100000`,
  ],
  [
    'webhook_events (50k)',
    `INSERT INTO webhook_events (id, provider, event_id, event_type, payload, status, received_at)
     SELECT gen_random_uuid(), CASE WHEN g % 4 = 0 THEN 'identity' ELSE 'billing' END, 'evt_' || g,
            'subscription.updated', '{}',
            (CASE WHEN g % 100 = 0 THEN 'FAILED' WHEN g % 50 = 1 THEN 'SKIPPED' ELSE 'PROCESSED' END)::"WebhookEventStatus",
            now() - random() * interval '90 days'
     FROM generate_series(1, 50000) g`,
  ],
  [
    'job_runs',
    `INSERT INTO job_runs (name, last_started_at, last_finished_at, last_status, last_duration_ms, runs)
     VALUES ('reconcile-credits', now() - interval '30 seconds', now() - interval '29 seconds', 'ok', 800, 5000),
            ('expire-subscriptions', now() - interval '20 minutes', now() - interval '20 minutes', 'ok', 120, 400)`,
  ],
  // A steady-state database has been vacuumed and analysed by autovacuum; so is this one.
  ['VACUUM ANALYZE', `VACUUM ANALYZE`],
];

/** Seeds an empty, migrated database at the volume above; ~90 s on a 2-core machine. */
export async function seedBig(url, log = (line) => console.log(line)) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT count(*)::int AS n FROM users');
    if (rows[0].n > 0) throw new Error(`${url} already holds users: seed an empty database`);
    // The rows are consistent by construction: skipping the per-row foreign-key triggers halves the seed
    // time (superuser only; without the right it simply runs slower).
    await client.query(`SET session_replication_role = replica`).catch(() => undefined);
    for (const [name, sql] of STEPS) {
      const started = performance.now();
      await client.query(sql);
      log(`  ${name.padEnd(28)} ${((performance.now() - started) / 1000).toFixed(2)} s`);
    }
  } finally {
    await client.end();
  }
}

async function main() {
  const t0 = performance.now();
  await deploy({ databaseUrl, log: (line) => console.log(`  ${line}`) });
  await seedBig(databaseUrl);
  await mkdir(join(HERE, '.tmp'), { recursive: true });
  await writeFile(join(HERE, '.tmp', 'metrics-db-url'), `${databaseUrl}\n`);
  console.log(`seeded ${databaseUrl} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  console.log('next: npm run build && node bench/metrics-overview.mjs');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
