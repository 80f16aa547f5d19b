// Load test of the owned-resource pattern on saved searches: create, then list (page of 50).
//
//   BENCH_API_URL=http://127.0.0.1:3000 BENCH_TOKEN=sk_live_... node bench/saved-searches.mjs
//
// Expects a running API (npm start, or dist/main.js). BENCH_TOKEN is sent as the Bearer credential: an API
// key (POST /api/v1/api_keys) suits a benchmark better than a 60-second identity token. The token's user
// needs room under its tier's saved-search limit (e.g. TEAM: 10,000) for BENCH_CREATES rows; everything
// the run creates is deleted afterwards. Not part of the jest suite.
//
// Optional: BENCH_CONNECTIONS (default 10), BENCH_CREATES (requests in the create phase, default 2000),
// BENCH_DURATION (seconds of the list phase, default 10), BENCH_JSON=1 (print only a JSON summary).
//
// Last results (2026-11-22, 2-core dev VM shared with other busy jobs, load average 11-16, so upper
// bounds on latency only; `/health` alone took 15 ms p50 there; API and PostgreSQL 15 on the same host,
// dist/main.js, TESTING=1, API-key auth):
//   10 connections: create 41.7 req/s p50 220 ms p99 548 ms; list (50 of 1,000 rows) 70 req/s p50 133 ms p99 302 ms
//    1 connection:  create 13.3 req/s p50  56 ms p99 428 ms; list 29.6 req/s p50 28 ms p99 128 ms
import autocannon from 'autocannon';

const baseUrl = (process.env.BENCH_API_URL ?? '').replace(/\/+$/, '');
const token = process.env.BENCH_TOKEN ?? '';
const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
const creates = Number(process.env.BENCH_CREATES ?? 2000);
const duration = Number(process.env.BENCH_DURATION ?? 10);
const jsonOnly = process.env.BENCH_JSON === '1';

if (!baseUrl || !token) {
  console.error(
    'Set BENCH_API_URL (e.g. http://127.0.0.1:3000) and BENCH_TOKEN (an API key or a Bearer token).',
  );
  process.exit(2);
}

const PATH = '/api/v1/saved_searches';
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const log = (...args) => {
  if (!jsonOnly) console.log(...args);
};

async function preflight() {
  const res = await fetch(`${baseUrl}${PATH}?page_size=1`, { headers });
  if (res.status !== 200) {
    console.error(`Preflight GET ${PATH} answered ${res.status}: ${await res.text()}`);
    process.exit(1);
  }
  return (await res.json()).total;
}

function summary(name, result) {
  return {
    scenario: name,
    requests: result.requests.total,
    req_per_s: Math.round(result.requests.average * 10) / 10,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    status_codes: Object.fromEntries(
      Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]),
    ),
  };
}

async function createPhase(createdIds) {
  const result = await autocannon({
    url: `${baseUrl}${PATH}`,
    connections,
    amount: creates,
    requests: [
      {
        method: 'POST',
        headers,
        setupRequest: (request, context) => {
          context.n = (context.n ?? 0) + 1;
          return {
            ...request,
            body: JSON.stringify({
              name: `bench ${process.pid} ${context.n}`,
              query: 'apartments near the river',
              filters: { rooms: { min: 2, max: 4 }, tags: ['balcony', 'quiet'], price: 1500 },
            }),
          };
        },
        onResponse: (status, body) => {
          if (status === 201) createdIds.push(JSON.parse(body).id);
        },
      },
    ],
  });
  return summary('create', result);
}

async function listPhase() {
  const result = await autocannon({
    url: `${baseUrl}${PATH}?page=1&page_size=50`,
    connections,
    duration,
    headers,
  });
  return summary('list (page_size=50)', result);
}

async function cleanup(ids) {
  const queue = [...ids];
  let failed = 0;
  const worker = async () => {
    for (let id = queue.pop(); id; id = queue.pop()) {
      const res = await fetch(`${baseUrl}${PATH}/${id}`, { method: 'DELETE', headers });
      if (res.status !== 204) failed += 1;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, connections) }, worker));
  return failed;
}

const before = await preflight();
log(`saved searches bench against ${baseUrl}: ${connections} connections; the user holds ${before} rows`);
const createdIds = [];
const results = [];
try {
  results.push(await createPhase(createdIds));
  results.push(await listPhase());
} finally {
  const failed = await cleanup(createdIds);
  log(`cleanup: deleted ${createdIds.length - failed} of ${createdIds.length} created rows`);
}

if (jsonOnly) {
  console.log(JSON.stringify({ bench: 'saved-searches', connections, results }));
} else {
  console.table(
    results.map(({ scenario, requests, req_per_s, p50_ms, p99_ms, non_2xx, errors }) => ({
      scenario,
      requests,
      'req/s': req_per_s,
      'p50 ms': p50_ms,
      'p99 ms': p99_ms,
      'non-2xx': non_2xx,
      errors,
    })),
  );
  const refused = results[0].status_codes['409'];
  if (refused) console.warn(`${refused} creates hit the tier limit (409): use a user on a larger tier.`);
}
