// GET and POST /api/v1/saved_searches with real RS256 tokens, next to a bare Express + pg + JWT-verify app
// sending the same SQL (bench/baselines/express-saved-searches.mjs), in the same run. The list reads page 1
// (50 rows) of a user who owns 100,000 rows; creates go to a TEAM user (limit 10,000) per side.
// `connections` picks the rows (default 1, 16 and 64 for the list, 16 and 64 for the create); both sides
// are warmed up for a second first, so the first measured row is not a cold start.
import { join } from 'node:path';
import { fmt, freePort, loadWithCpu, ratio, ROOT, startProcess, withClient } from './lib.mjs';

const ROWS = 100_000;
const PATH = '/api/v1/saved_searches';

async function signIn(apiUrl, token) {
  const res = await fetch(`${apiUrl}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`GET /api/v1/me answered ${res.status}: ${await res.text()}`);
  return (await res.json()).id;
}

export async function benchSavedSearches(ctx, { connections = [1, 16, 64] } = {}) {
  const { apiUrl, db, idp, duration } = ctx;
  const listToken = await idp.token('user_bench_list', 'bench-list@example.com');
  const creatorTokens = {
    ours: await idp.token('user_bench_create_a', 'bench-create-a@example.com'),
    baseline: await idp.token('user_bench_create_b', 'bench-create-b@example.com'),
  };
  const listUser = await signIn(apiUrl, listToken);
  for (const token of Object.values(creatorTokens)) await signIn(apiUrl, token);
  await withClient(db.url, async (client) => {
    await client.query(
      `INSERT INTO saved_searches (id, user_id, name, query, filters, created_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, 'search ' || g, 'q=' || g, '{"tags": ["a", "b"]}'::jsonb,
              now() - g * interval '1 second', now() - g * interval '1 second'
       FROM generate_series(1, $2::int) g`,
      [listUser, ROWS],
    );
    await client.query(`UPDATE users SET current_tier = 'TEAM' WHERE identity_user_id LIKE 'user_bench_create_%'`);
    await client.query('ANALYZE saved_searches');
  });

  const port = await freePort();
  const baseline = await startProcess(
    join(ROOT, 'bench', 'baselines', 'express-saved-searches.mjs'),
    // Through the same TLS hop as the API (ctx.env.DATABASE_URL): both sides pay for encrypted statements.
    { PORT: String(port), DATABASE_URL: ctx.env.DATABASE_URL, JWKS_URL: idp.jwksUrl, ISSUER: idp.issuer, POOL: ctx.env.DATABASE_POOL_SIZE },
    { readyUrl: `http://127.0.0.1:${port}/health`, args: [] },
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const rows = [];
  try {
    const pidOf = (url) => (url === apiUrl ? ctx.apiPid : baseline.child.pid);
    const get = (url, conns, seconds = duration) =>
      loadWithCpu(pidOf(url), { url: `${url}${PATH}?page=1&page_size=50`, connections: conns, duration: seconds, headers: { authorization: `Bearer ${listToken}` } });
    // Same answer from both sides before measuring anything.
    const [a, b] = await Promise.all(
      [apiUrl, baseUrl].map(async (url) =>
        (await fetch(`${url}${PATH}?page=1&page_size=50`, { headers: { authorization: `Bearer ${listToken}` } })).json(),
      ),
    );
    if (a.total !== ROWS || b.total !== ROWS || a.items.length !== 50 || a.items[0].id !== b.items[0].id) {
      throw new Error(`list answers differ: ours total ${a.total}, baseline total ${b.total}`);
    }
    await get(apiUrl, 16, 1);
    await get(baseUrl, 16, 1);
    for (const conns of connections) {
      const ours = await get(apiUrl, conns);
      const base = await get(baseUrl, conns);
      rows.push(row(`GET ${PATH} (page of 50 / 100k), ${conns} conn`, ours, base, 0.5));
    }
    const post = (url, token, conns) =>
      loadWithCpu(pidOf(url), {
        url: `${url}${PATH}`,
        connections: conns,
        duration,
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Bench search', query: 'status:open', filters: { tier: 'pro' } }),
      });
    for (const conns of connections.filter((n) => n >= 16)) {
      const ours = await post(apiUrl, creatorTokens.ours, conns);
      const base = await post(baseUrl, creatorTokens.baseline, conns);
      rows.push(row(`POST ${PATH}, ${conns} conn`, ours, base, 0.5));
    }
  } finally {
    await baseline.stop();
  }
  return rows;
}

function row(figure, ours, base, goalRatio) {
  const r = ratio(ours.rps, base.rps);
  return {
    figure,
    value: `${Math.round(ours.rps)} req/s, p50 ${ours.p50} ms, p99 ${ours.p99} ms, ${cpu(ours)}${ours.errors ? `, ${ours.errors} errors` : ''}`,
    baseline: `express+pg ${Math.round(base.rps)} req/s, p50 ${base.p50} ms, p99 ${base.p99} ms, ${cpu(base)}${base.errors ? `, ${base.errors} errors` : ''}`,
    ratio: r,
    goal: `>= ${goalRatio}x`,
    met: r >= goalRatio && ours.errors === 0 && base.errors === 0,
  };
}

/** CPU of the answering process per request (user + system time over the run / requests answered). */
export const cpu = (result) => `${fmt(result.cpuMsPerRequest, 2)} ms CPU/req`;
