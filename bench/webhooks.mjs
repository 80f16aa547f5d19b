// Billing webhook ingest: signed, all-distinct `subscription.updated` events for 500 live subscriptions,
// through the API's real path (signature, claim, archive, state machine, audit in one transaction), next to
// pgbench's TPC-B on a scratch database of the same server in the same run. Afterwards the database must
// hold exactly one processed row and one archive row per accepted event (zero duplicates).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { load, paddleSignature, ratio, scratchDatabase, withClient } from './lib.mjs';

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
    const { stdout } = await run('pgbench', ['-n', '-c', String(CONNECTIONS), '-j', '2', '-T', String(duration), db.url], {
      maxBuffer: 1 << 24,
    });
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`pgbench printed no tps:\n${stdout}`);
    return tps;
  } finally {
    await db.drop();
  }
}

export async function benchWebhooks(ctx) {
  const runId = Date.now().toString(36);
  const secret = ctx.env.BILLING_WEBHOOK_SECRET;
  const { subIds, start } = await createSubscriptions(ctx, runId);
  let n = 0;
  const result = await load({
    url: ctx.apiUrl,
    connections: CONNECTIONS,
    duration: ctx.duration,
    requests: [
      {
        method: 'POST',
        path: '/webhooks/billing',
        setupRequest: (req) => {
          const i = n++;
          const body = JSON.stringify(
            subscriptionEvent({
              type: 'subscription.updated',
              subId: subIds[i % subIds.length],
              eventId: `evt_bench_u_${runId}_${i}`,
              // Strictly increasing per subscription, all after the created event.
              occurredAt: new Date(start + 1000 + i),
            }),
          );
          return { ...req, body, headers: { 'content-type': 'application/json', 'paddle-signature': paddleSignature(secret, body) } };
        },
      },
    ],
  });
  const sent = n;
  // Exactly once: one claim and one archive row per event, and one state-machine effect (its audit entry).
  const stored = await withClient(ctx.db.url, async (client) => {
    const { rows } = await client.query(
      `SELECT (SELECT count(*)::int FROM processed_webhook_events WHERE event_id LIKE $1) AS processed,
              (SELECT count(*)::int FROM webhook_events WHERE event_id LIKE $1) AS archived,
              (SELECT count(*)::int FROM audit_logs WHERE action = 'subscription.updated' AND details->>'event_id' LIKE $1) AS effects,
              (SELECT count(*)::int - count(DISTINCT details->>'event_id')::int FROM audit_logs
                WHERE action = 'subscription.updated' AND details->>'event_id' LIKE $1) AS duplicates`,
      [`evt_bench_u_${runId}_%`],
    );
    return rows[0];
  });
  const accepted = result.total - result.errors;
  // Requests still in flight when the load stopped may be processed without being counted as answered.
  const consistent =
    stored.duplicates === 0 &&
    stored.processed === stored.archived &&
    stored.processed === stored.effects &&
    stored.processed >= accepted &&
    stored.processed <= sent;
  const tps = await pgbench(ctx.duration);
  const r = ratio(result.rps, tps);
  return [
    {
      figure: `billing webhook ingest (subscription.updated, all distinct), ${CONNECTIONS} conn`,
      value:
        `${Math.round(result.rps)} events/s, p50 ${result.p50} ms, p99 ${result.p99} ms; ${accepted} answered 2xx, ` +
        `${stored.processed} processed, ${stored.archived} archived, ${stored.effects} applied, ${stored.duplicates} duplicates` +
        `${result.errors ? `, ${result.errors} errors` : ''}`,
      baseline: `pgbench TPC-B (scale 10, ${CONNECTIONS} clients) ${Math.round(tps)} tps`,
      ratio: r,
      goal: '>= 500 events/s and >= 0.35x, zero duplicates',
      met: result.rps >= 500 && r >= 0.35 && consistent && result.errors === 0,
    },
  ];
}
