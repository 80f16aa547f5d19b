// Billing webhooks: signed, all-distinct `subscription.updated` events (Paddle's own fixture, re-keyed) for 500 live subscriptions. Intake
// (the API verifies, validates and stores each in one statement) at 16 and 64 senders; applied end to end
// (the worker, from the first send to the last effect committed); lag at a steady 300 events/s; next to
// pgbench's TPC-B on a scratch database of the same server in the same run. Afterwards every accepted event
// must have exactly one claim, one archive row (PROCESSED, or SKIPPED as stale) and one effect.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { cpuMs, fmt, load, machineCpuMs, matchingCpuMs, paddleSignature, postgresCpuMs, ratio, scratchDatabase, statusMb, withClient } from './lib.mjs';

const run = promisify(execFile);
const SUBSCRIPTIONS = 500;
const CONNECTIONS = 16;
const DAY = 86_400_000;

function subscriptionEvent({ type, subId, eventId, occurredAt, token, status = 'active' }) {
  return {
    event_id: eventId,
    event_type: type,
    occurred_at: occurredAt.toISOString(),
    notification_id: `ntf_${randomUUID()}`,
    data: {
      id: subId,
      status,
      customer_id: `ctm_${subId}`,
      currency_code: 'USD',
      billing_cycle: { interval: 'month', frequency: 1 },
      items: [
        {
          quantity: 1,
          status: 'active',
          price: { id: 'pri_pro', unit_price: { amount: '1500', currency_code: 'USD' }, billing_cycle: { interval: 'month', frequency: 1 } },
        },
      ],
      current_billing_period: {
        starts_at: new Date(occurredAt.getTime() - DAY).toISOString(),
        ends_at: new Date(occurredAt.getTime() + 29 * DAY).toISOString(),
      },
      scheduled_change: null,
      canceled_at: null,
      paused_at: null,
      custom_data: token ? { checkout_token: token } : null,
    },
  };
}

/**
 * The load's `subscription.updated` as Paddle sends it: the node SDK's own fixture (two items with their
 * products, 2.9 KB; test/contracts/fixtures/README.md), re-keyed to one of the bench's subscriptions. Its first
 * item's price is the configured PRO price (the handler reads the first item); the rest is the fixture's. A
 * payload over PostgreSQL's 2 KB row threshold is compressed (pglz by default), as real traffic is.
 * BENCH_WEBHOOK_PAYLOAD=small sends the bench's older minimal event instead (0.7 KB), to compare with runs
 * before the one of 2026-11-28 14:07.
 */
const UPDATED_PARTS = (() => {
  // The fixture serialised once around its varying fields (so the load generator's cost stays a concatenation).
  const event = JSON.parse(
    readFileSync(new URL('../test/contracts/fixtures/paddle/node-sdk.subscription-updated.json', import.meta.url), 'utf8'),
  );
  const { data } = event;
  Object.assign(event, { event_id: '\u0000evt', occurred_at: '\u0000at', notification_id: '\u0000ntf' });
  Object.assign(data, { id: '\u0000sub', customer_id: '\u0000ctm', status: 'active' });
  data.items[0].price.id = 'pri_pro';
  data.current_billing_period = { starts_at: '\u0000starts', ends_at: '\u0000ends' };
  // [text, field, text, field, ..., text]
  return JSON.stringify(event).split(/"\\u0000(\w+)"/);
})();

function updatedBody({ subId, eventId, occurredAt }) {
  if (process.env.BENCH_WEBHOOK_PAYLOAD === 'small') {
    return JSON.stringify(subscriptionEvent({ type: 'subscription.updated', subId, eventId, occurredAt }));
  }
  const at = occurredAt.getTime();
  const values = {
    evt: eventId,
    at: occurredAt.toISOString(),
    ntf: `ntf_${randomUUID()}`,
    sub: subId,
    ctm: `ctm_${subId}`,
    starts: new Date(at - DAY).toISOString(),
    ends: new Date(at + 29 * DAY).toISOString(),
  };
  return UPDATED_PARTS.map((part, i) => (i % 2 === 0 ? part : JSON.stringify(values[part]))).join('');
}

async function post(apiUrl, secret, event) {
  const body = JSON.stringify(event);
  const res = await fetch(`${apiUrl}/webhooks/billing`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'paddle-signature': paddleSignature(secret, body) },
    body,
  });
  await res.arrayBuffer();
  if (res.status >= 300) throw new Error(`${event.event_type} answered ${res.status}`);
}

/** Creates the subscriptions through the real path: JIT user, checkout token from the API, signed created event. */
async function createSubscriptions(ctx, runId) {
  const secret = ctx.env.BILLING_WEBHOOK_SECRET;
  const start = Date.now() - 3_600_000;
  const subIds = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < SUBSCRIPTIONS) {
        const i = next++;
        const jwt = await ctx.idp.token(`user_bench_sub_${runId}_${i}`, `bench-sub-${runId}-${i}@example.com`);
        const res = await fetch(`${ctx.apiUrl}/api/v1/billing/checkout-token`, {
          method: 'POST',
          headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
          body: JSON.stringify({ tier: 'PRO' }),
        });
        if (res.status !== 201 && res.status !== 200) throw new Error(`checkout-token answered ${res.status}: ${await res.text()}`);
        const { token } = await res.json();
        const subId = `sub_bench_${runId}_${i}`;
        await post(ctx.apiUrl, secret, subscriptionEvent({ type: 'subscription.created', subId, eventId: `evt_bench_c_${runId}_${i}`, occurredAt: new Date(start), token }));
        subIds.push(subId);
      }
    }),
  );
  return { subIds, start };
}

async function pgbench(duration) {
  const db = await scratchDatabase('pgbench', { migrate: false });
  try {
    await run('pgbench', ['-i', '-q', '-s', '10', db.url], { maxBuffer: 1 << 24 });
    const before = await Promise.all([machineCpuMs(), postgresCpuMs()]);
    const { stdout } = await run('pgbench', ['-n', '-c', String(CONNECTIONS), '-j', '2', '-T', String(duration), db.url], {
      maxBuffer: 1 << 24,
    });
    const after = await Promise.all([machineCpuMs(), postgresCpuMs()]);
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`pgbench printed no tps:\n${stdout}`);
    const transactions = Number(/number of transactions actually processed: (\d+)/.exec(stdout)?.[1]) || tps * duration;
    const [machine, postgres] = after.map((value, i) => (value - before[i]) / transactions);
    return { tps, machine, postgres };
  } finally {
    await db.drop();
  }
}

/** Waits until no row of `pattern` is RECEIVED (the worker applied everything), or the timeout. */
async function drained(db, pattern, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await withClient(db, async (client) => {
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM webhook_events WHERE event_id LIKE $1 AND status = 'RECEIVED'`,
        [pattern],
      );
      return rows[0].n;
    });
    if (left === 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Exactly once: one claim, one archive row and one state-machine effect (its audit entry) per event. */
async function ledger(db, pattern) {
  return withClient(db, async (client) => {
    const { rows } = await client.query(
      `SELECT (SELECT count(*)::int FROM processed_webhook_events WHERE event_id LIKE $1) AS claimed,
              (SELECT count(*)::int FROM webhook_events WHERE event_id LIKE $1) AS archived,
              (SELECT count(*)::int FROM webhook_events WHERE event_id LIKE $1 AND status NOT IN ('PROCESSED', 'SKIPPED')) AS unprocessed,
              (SELECT count(*)::int FROM audit_logs WHERE action = 'subscription.updated' AND details->>'event_id' LIKE $1) AS effects,
              (SELECT count(*)::int - count(DISTINCT details->>'event_id')::int FROM audit_logs
                WHERE action = 'subscription.updated' AND details->>'event_id' LIKE $1) AS duplicates,
              (SELECT extract(epoch FROM max(processed_at) - min(received_at)) FROM webhook_events WHERE event_id LIKE $1) AS span_s,
              (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at))
                 FROM webhook_events WHERE event_id LIKE $1) AS lag_p50,
              (SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - received_at))
                 FROM webhook_events WHERE event_id LIKE $1) AS lag_p99`,
      [pattern],
    );
    return rows[0];
  });
}

/**
 * CPU time so far of every process a webhook costs: ours, PostgreSQL, Redis, the TLS terminator, this
 * process (the load generator), and the whole machine (the rest is what nothing above accounts for).
 */
async function cpuSnapshot(ctx) {
  const pid = ctx.workerPid?.();
  const [api, worker, postgres, redis, tls, machine] = await Promise.all([
    cpuMs(ctx.apiPid),
    pid ? cpuMs(pid) : NaN,
    postgresCpuMs(),
    matchingCpuMs(/^redis-server/),
    matchingCpuMs(/tls-proxy\.mjs/),
    machineCpuMs(),
  ]);
  const { user, system } = process.cpuUsage();
  return { api, worker, postgres, redis, tls, generator: (user + system) / 1000, machine };
}

/** Each figure of a snapshot's difference, per event. */
function perEvent(before, after, events) {
  return Object.fromEntries(Object.keys(after).map((key) => [key, (after[key] - before[key]) / Math.max(1, events)]));
}

/**
 * The webhook jobs Redis keeps completed (job results are kept 24 h, SPEC). `count` reads how many there are;
 * `bytes` samples MEMORY USAGE of up to 200 of their hashes and of the completed set (what one job costs).
 */
async function keptJobs(ctx, { bytes = false } = {}) {
  const redis = new Redis(ctx.env.REDIS_URL, { lazyConnect: true });
  const completed = `${ctx.env.REDIS_KEY_PREFIX}:webhooks:completed`;
  try {
    const count = await redis.zcard(completed);
    if (!bytes || count === 0) return { count };
    const ids = await redis.zrange(completed, 0, 199);
    const sizes = await Promise.all(ids.map((id) => redis.memory('USAGE', `${ctx.env.REDIS_KEY_PREFIX}:webhooks:${id}`, 'SAMPLES', 0)));
    const hash = sizes.reduce((sum, n) => sum + Number(n ?? 0), 0) / ids.length;
    const set = Number(await redis.memory('USAGE', completed, 'SAMPLES', 0)) / count;
    return { count, perJob: hash + set };
  } finally {
    redis.disconnect();
  }
}

const cpuText = (cpu) => {
  const rest = cpu.machine - ['api', 'worker', 'postgres', 'redis', 'tls', 'generator'].reduce((sum, key) => sum + (cpu[key] || 0), 0);
  return (
    `machine ${fmt(cpu.machine, 2)} ms = API ${fmt(cpu.api, 2)}, worker ${fmt(cpu.worker, 2)}, PostgreSQL ` +
    `${fmt(cpu.postgres, 2)}, Redis ${fmt(cpu.redis, 2)}, TLS terminator ${fmt(cpu.tls, 2)}, load generator ` +
    `${fmt(cpu.generator, 2)}, rest ${fmt(rest, 2)}`
  );
};

/** Sends all-distinct subscription.updated events with `connections` senders (optionally at a fixed rate). */
async function send(ctx, { subIds, start, runId, tag, connections, rate }) {
  const secret = ctx.env.BILLING_WEBHOOK_SECRET;
  let n = 0;
  const result = await load({
    url: ctx.apiUrl,
    connections,
    duration: ctx.duration,
    ...(rate ? { overallRate: rate } : {}),
    requests: [
      {
        method: 'POST',
        path: '/webhooks/billing',
        setupRequest: (req) => {
          const i = n++;
          const body = updatedBody({
            subId: subIds[i % subIds.length],
            eventId: `evt_bench_${tag}_${runId}_${i}`,
            // Increasing per subscription, all after the created event.
            occurredAt: new Date(start + 1000 + i),
          });
          return { ...req, body, headers: { 'content-type': 'application/json', 'paddle-signature': paddleSignature(secret, body) } };
        },
      },
    ],
  });
  return { ...result, sent: n, accepted: result.total - result.errors };
}

const consistentOf = (stored, run) =>
  stored.duplicates === 0 &&
  stored.claimed === stored.archived &&
  stored.unprocessed === 0 &&
  stored.effects === stored.archived &&
  stored.archived >= run.accepted &&
  stored.archived <= run.sent;

export async function benchWebhooks(ctx) {
  const runId = Date.now().toString(36);
  const { subIds, start } = await createSubscriptions(ctx, runId);
  // The created events are applied by the worker: the updates must find their subscriptions.
  if (!(await drained(ctx.db.url, `evt_bench_c_${runId}_%`))) throw new Error('created events were not applied');
  const bench = await pgbench(ctx.duration);
  const tps = bench.tps;
  const rows = [];
  /** Completed jobs each load left in Redis (see retentionRow). */
  const kept = [];
  // BENCH_WEBHOOKS_BACKLOG_ONLY=1: only the backlog figures (a quicker loop while profiling the worker).
  const phases = process.env.BENCH_WEBHOOKS_BACKLOG_ONLY === '1' ? [] : [CONNECTIONS, 64];
  for (const [index, connections] of phases.entries()) {
    const tag = `u${connections}`;
    // Each run's events are newer than the previous run's for every subscription.
    // CPU per event of every process and of the machine over the phase (sending and draining): next to
    // pgbench's CPU per transaction, what the ratio is made of (bench/RESULTS.md, fifth session).
    const cpuBefore = await cpuSnapshot(ctx);
    const jobsBefore = await keptJobs(ctx);
    const run = await send(ctx, { subIds, start: start + index * 5_000_000, runId, tag, connections });
    const done = await drained(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
    const cpu = perEvent(cpuBefore, await cpuSnapshot(ctx), run.accepted);
    const jobs = (await keptJobs(ctx)).count - jobsBefore.count;
    kept.push({ label: `${connections} senders`, events: run.accepted, jobs });
    const stored = await ledger(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
    const consistent = done && consistentOf(stored, run);
    const applied = stored.archived / Number(stored.span_s);
    const intakeRatio = ratio(run.rps, tps);
    rows.push({
      figure: `billing webhook intake (subscription.updated, all distinct), ${connections} senders`,
      value:
        `${Math.round(run.rps)} events/s, p50 ${run.p50} ms, p99 ${run.p99} ms; ${run.accepted} accepted` +
        `${run.errors ? `, ${run.errors} errors` : ''}`,
      baseline:
        `pgbench TPC-B (scale 10, ${CONNECTIONS} clients) ${Math.round(tps)} tps; CPU/transaction: machine ` +
        `${fmt(bench.machine, 2)} ms, PostgreSQL ${fmt(bench.postgres, 2)} ms`,
      ratio: intakeRatio,
      goal: connections === CONNECTIONS ? '>= 1,000 events/s and >= 0.5x; p99 < 50 ms' : '>= 1,000 events/s and >= 0.5x',
      met: run.rps >= 1000 && intakeRatio >= 0.5 && (connections !== CONNECTIONS || run.p99 < 50) && run.errors === 0,
    });
    rows.push({
      figure: `billing webhooks applied end to end (first send to last effect), after ${connections} senders`,
      value:
        `${Math.round(applied)} events/s (CPU/event: ${cpuText(cpu)}); ` +
        `${stored.archived} archived, ${stored.effects} applied, ` +
        `${stored.unprocessed} not processed, ${stored.duplicates} duplicates; ${jobs} jobs (${fmt(run.accepted / Math.max(1, jobs))} events per job)`,
      baseline: `pgbench TPC-B ${Math.round(tps)} tps`,
      ratio: ratio(applied, tps),
      goal: '>= 500 events/s and >= 0.35x; zero duplicates, zero lost',
      met: applied >= 500 && ratio(applied, tps) >= 0.35 && consistent,
    });
  }
  if (phases.length === 0) return [...rows, ...(await backlog(ctx, { subIds, start: start + 20_000_000, runId, tps }))];
  // Lag at a steady 300 events/s: received -> processed per event.
  const tag = 'steady';
  const jobsBefore = await keptJobs(ctx);
  const steady = await send(ctx, { subIds, start: start + 10_000_000, runId, tag, connections: CONNECTIONS, rate: 300 });
  const done = await drained(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
  kept.push({ label: 'a steady 300 events/s', events: steady.accepted, jobs: (await keptJobs(ctx)).count - jobsBefore.count });
  const stored = await ledger(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
  rows.push({
    figure: 'billing webhook lag at a steady 300 events/s (received -> applied)',
    value:
      `p50 ${Math.round(Number(stored.lag_p50) * 1000)} ms, p99 ${Math.round(Number(stored.lag_p99) * 1000)} ms; ` +
      `${Math.round(steady.rps)} events/s sent, ${stored.archived} archived, ${stored.duplicates} duplicates`,
    baseline: '-',
    ratio: NaN,
    goal: 'lag p99 < 2 s; zero duplicates, zero lost',
    met: Number(stored.lag_p99) < 2 && done && consistentOf(stored, steady),
  });
  rows.push(await retentionRow(ctx, kept));
  if (ctx.killWorker) rows.push(await killedMidRun(ctx, { subIds, start: start + 15_000_000, runId }));
  if (ctx.stopWorker) rows.push(...(await backlog(ctx, { subIds, start: start + 20_000_000, runId, tps })));
  return rows;
}

/**
 * What the 24 h retention of job results (SPEC) costs Redis for webhook traffic: the measured size of a
 * completed job, the events per job each load gave (one job per intake group, decision 15m), and what a
 * day of 500 events/s (issue 15's applied goal) would keep at that many events per job. A figure for sizing
 * Redis, not a goal.
 */
async function retentionRow(ctx, kept) {
  const { perJob } = await keptJobs(ctx, { bytes: true });
  const day = 500 * 86_400;
  const loads = kept
    .filter((load) => load.jobs > 0)
    .map((load) => {
      const perEvent = (perJob * load.jobs) / load.events;
      return `${load.label}: ${fmt(load.events / load.jobs)} events per job, ${Math.round(perEvent)} B per event, a day at 500 events/s ${fmt((perEvent * day) / 2 ** 30, 2)} GiB`;
    });
  return {
    figure: 'Redis kept for the 24 h retention of completed webhook jobs',
    value: `${Math.round(perJob ?? NaN)} B per completed job (its hash and its entry in the completed set, MEMORY USAGE); ${loads.join('; ')}`,
    baseline: '-',
    ratio: NaN,
    goal: '- (sizing figure)',
    met: '-',
  };
}

/**
 * The two halves apart: intake with no worker running (the API and PostgreSQL alone), then the worker
 * alone applying that backlog, timed from its start (ready) to the last effect committed. Not goals of
 * their own: they show which half bounds the end-to-end figures above.
 */
async function backlog(ctx, { subIds, start, runId, tps }) {
  const tag = 'backlog';
  await ctx.stopWorker();
  const intakeBefore = await cpuSnapshot(ctx);
  const run = await send(ctx, { subIds, start, runId, tag, connections: CONNECTIONS });
  const intakeCpu = perEvent(intakeBefore, await cpuSnapshot(ctx), run.accepted);
  const started = await withClient(ctx.db.url, async (client) => (await client.query('SELECT now() AS t')).rows[0].t);
  const pid = await ctx.restartWorker();
  const cpuBefore = await cpuMs(pid);
  const done = await drained(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
  const cpuPerEvent = ((await cpuMs(pid)) - cpuBefore) / Math.max(1, run.accepted);
  const rss = await statusMb(pid, 'VmRSS');
  const peak = await statusMb(pid, 'VmHWM');
  const stored = await ledger(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
  const finished = await withClient(ctx.db.url, async (client) => {
    const { rows } = await client.query(`SELECT max(processed_at) AS t FROM webhook_events WHERE event_id LIKE $1`, [
      `evt_bench_${tag}_${runId}_%`,
    ]);
    return rows[0].t;
  });
  const applied = stored.archived / ((finished.getTime() - started.getTime()) / 1000);
  return [
    {
      figure: `billing webhook intake with no worker running, ${CONNECTIONS} senders`,
      value:
        `${Math.round(run.rps)} events/s, p50 ${run.p50} ms, p99 ${run.p99} ms; ${run.accepted} accepted` +
        `${run.errors ? `, ${run.errors} errors` : ''} (CPU/event: ${cpuText(intakeCpu)})`,
      baseline: `pgbench TPC-B ${Math.round(tps)} tps`,
      ratio: ratio(run.rps, tps),
      goal: '- (shows the intake half alone)',
      met: '-',
    },
    {
      figure: 'billing webhooks applied by the worker alone (that backlog, worker start to last effect)',
      value:
        `${Math.round(applied)} events/s, ${fmt(cpuPerEvent, 2)} ms worker CPU/event, worker RSS ${fmt(rss)} MB ` +
        `(peak ${fmt(peak)} MB); ${stored.archived} archived, ` +
        `${stored.effects} applied, ${stored.unprocessed} not processed, ${stored.duplicates} duplicates`,
      baseline: `pgbench TPC-B ${Math.round(tps)} tps`,
      ratio: ratio(applied, tps),
      goal: '- (shows the apply half alone); zero duplicates, zero lost',
      met: done && consistentOf(stored, run) ? '-' : '**no**',
    },
  ];
}

/** Issue 15 item 5: the worker SIGKILLed half-way through a run and restarted; nothing lost, nothing twice. */
async function killedMidRun(ctx, { subIds, start, runId }) {
  const tag = 'kill';
  let killed = Promise.resolve();
  const timer = setTimeout(() => {
    killed = ctx.killWorker();
  }, (ctx.duration * 1000) / 2);
  const run = await send(ctx, { subIds, start, runId, tag, connections: CONNECTIONS });
  clearTimeout(timer);
  await killed;
  // Jobs active at the kill come back when BullMQ declares them stalled (QUEUE_STALLED_INTERVAL_MS).
  const done = await drained(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
  const stored = await ledger(ctx.db.url, `evt_bench_${tag}_${runId}_%`);
  return {
    figure: `billing webhooks with the worker SIGKILLed mid-run and restarted, ${CONNECTIONS} senders`,
    value:
      `${run.accepted} accepted, ${stored.archived} archived, ${stored.effects} applied, ${stored.unprocessed} ` +
      `not applied, ${stored.duplicates} duplicates; all applied ${Math.round(Number(stored.span_s))} s after the first send`,
    baseline: '-',
    ratio: NaN,
    goal: 'zero duplicates, zero lost',
    met: done && consistentOf(stored, run),
  };
}
