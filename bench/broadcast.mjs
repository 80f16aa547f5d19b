// Broadcast dispatch: a 10,000-recipient marketing broadcast created through the API
// (POST /api/v1/admin/broadcasts with an admin's RS256 token) and dispatched by the compiled worker process
// against a local Resend-shaped e-mail API: once with no client-side ceiling, once with the default
// ceiling (8.3 requests/s, 100 recipients per batch request, so at most 830 recipients/s). Every address
// must receive exactly one message.
import { join } from 'node:path';
import { fmt, productionNodeArgs, ROOT, startProcess, withClient } from './lib.mjs';

export const RECIPIENTS = 10_000;
const DEFAULT_CEILING = 8.3;
const BATCH = 100;

async function seedAudience(url) {
  await withClient(url, (client) =>
    client.query(
      `INSERT INTO users (id, identity_user_id, email, marketing_consent_given, marketing_consent_at, marketing_consent_source)
       SELECT gen_random_uuid(), 'user_bench_rcpt_' || i, 'bench-rcpt-' || i || '@example.com', true, now(), 'bench'
       FROM generate_series(1, $1::int) AS i`,
      [RECIPIENTS],
    ),
  );
}

async function runOnce(ctx, { label, ceiling }) {
  const env = { ...ctx.env, ...(ceiling ? { EMAIL_MAX_REQUESTS_PER_SECOND: String(ceiling) } : {}) };
  const worker = await startProcess(join(ROOT, 'dist', 'worker.js'), env, {
    readyUrl: `${ctx.workerUrl}/health`,
    args: productionNodeArgs('start:worker'),
  });
  try {
    ctx.email.reset();
    const token = await ctx.idp.token('user_bench_admin', ctx.adminEmail);
    const started = performance.now();
    const res = await fetch(`${ctx.apiUrl}/api/v1/admin/broadcasts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ template_key: 'newsletter', audience: {}, bypass_consent: false }),
    });
    if (res.status !== 201) throw new Error(`POST /api/v1/admin/broadcasts answered ${res.status}: ${await res.text()}`);
    const { id } = await res.json();
    let run;
    for (;;) {
      run = await withClient(ctx.db.url, async (client) => (await client.query('SELECT * FROM broadcast_runs WHERE id = $1', [id])).rows[0]);
      if (run.status === 'done' || run.status === 'failed') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - started) / 1000;
    const { stats } = ctx.email;
    const batchTimes = stats.requestTimes;
    // Request rate between the first and the last request (the steady state the ceiling governs).
    const rps = batchTimes.length > 1 ? (batchTimes.length - 1) / ((batchTimes.at(-1) - batchTimes[0]) / 1000) : NaN;
    const rss = await worker.rssMb();
    // Only the audience counts (a welcome e-mail to the admin created just in time may arrive meanwhile).
    const counts = [...stats.addresses].filter(([to]) => to.startsWith('bench-rcpt-')).map(([, n]) => n);
    const delivered = counts.reduce((a, b) => a + b, 0);
    return { label, ceiling, seconds, run, stats: { requests: stats.requests, delivered, addresses: counts.length }, rps, rss };
  } finally {
    await worker.stop();
  }
}

/** Needs ctx.email (fakeEmailApi), the API process with EMAIL_PROVIDER=resend pointing at it, and ctx.adminEmail. */
export async function benchBroadcast(ctx) {
  await seedAudience(ctx.db.url);
  const results = [];
  results.push(await runOnce(ctx, { label: 'no ceiling', ceiling: 1_000_000 }));
  results.push(await runOnce(ctx, { label: `default ceiling (${DEFAULT_CEILING} req/s x ${BATCH})`, ceiling: null }));
  const rows = results.map((r) => {
    // End to end (POST to done) for the uncapped run; between the first and last provider request for the
    // capped one, whose rate the ceiling governs (the first batch leaves at once).
    const perSecond = r.ceiling ? RECIPIENTS / r.seconds : r.rps * BATCH;
    const once = r.stats.addresses === RECIPIENTS && r.stats.delivered === RECIPIENTS && r.run.status === 'done';
    const target = DEFAULT_CEILING * BATCH;
    return {
      figure: `broadcast dispatch, ${RECIPIENTS} recipients, ${r.label}`,
      value:
        `${Math.round(perSecond)} recipients/s (${RECIPIENTS} in ${fmt(r.seconds, 1)} s end to end, ${r.stats.requests} provider requests at ${fmt(r.rps, 2)} req/s); ` +
        `${r.stats.delivered} delivered to ${r.stats.addresses} addresses, run ${r.run.status}`,
      baseline: r.ceiling ? '-' : `ceiling ${fmt(target, 0)} recipients/s`,
      ratio: r.ceiling ? NaN : perSecond / target,
      goal: r.ceiling ? '>= 1,000 recipients/s, each once' : 'within 5% of 830/s, each once',
      met: once && (r.ceiling ? perSecond >= 1000 : Math.abs(perSecond / target - 1) <= 0.05),
    };
  });
  return { rows, workerRssMb: Math.max(...results.map((r) => r.rss)) };
}
