// POST /api/v1/ai/completions, the whole metered call (token, principal, rate limits, reserve, the model,
// settle), with the model answering at once from its own process (bench/fake-llm.mjs, the tests' stub),
// next to a bare Express + jose + pg app doing the same statements and the same model call
// (bench/baselines/express-completions.mjs), in the same run. Every request names one of USERS TEAM
// users in turn (with plenty of credits), so the per-user AI limit (300 a minute) is never what is measured.
import { join } from 'node:path';
import { freePort, loadWithCpu, ratio, ROOT, startProcess, withClient } from './lib.mjs';
import { cpu } from './saved-searches.mjs';

const USERS = 64;
const PATH = '/api/v1/ai/completions';
const BODY = JSON.stringify({ messages: [{ role: 'user', content: 'Say hello in five words.' }] });

export async function benchCompletions(ctx, { connections = [16] } = {}) {
  const { apiUrl, db, idp, duration } = ctx;
  const tokens = [];
  for (let i = 0; i < USERS; i += 1) tokens.push(await idp.token(`user_bench_ai_${i}`, `bench-ai-${i}@example.com`));
  // Signed in once each (JIT users, like the saved-search rows), then TEAM with a large grant.
  for (const token of tokens) {
    const res = await fetch(`${apiUrl}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET /api/v1/me answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  }
  await withClient(db.url, async (client) => {
    await client.query(`
      WITH bench AS (SELECT id FROM users WHERE identity_user_id LIKE 'user_bench_ai_%'),
      granted AS (
        INSERT INTO credit_transactions (id, user_id, delta, kind, job_id, details)
        SELECT gen_random_uuid(), id, 100000000, 'grant', 'bench-grant-' || id, '{}'::jsonb FROM bench
        RETURNING user_id, delta)
      UPDATE users SET current_tier = 'TEAM', credit_balance = credit_balance + granted.delta
      FROM granted WHERE users.id = granted.user_id`);
  });

  const port = await freePort();
  const baseline = await startProcess(
    join(ROOT, 'bench', 'baselines', 'express-completions.mjs'),
    {
      PORT: String(port),
      // Through the same TLS hop as the API: both sides pay for encrypted statements.
      DATABASE_URL: ctx.env.DATABASE_URL,
      JWKS_URL: idp.jwksUrl,
      ISSUER: idp.issuer,
      POOL: ctx.env.DATABASE_POOL_SIZE,
      LLM_BASE_URL: ctx.env.LLM_BASE_URL,
    },
    { readyUrl: `http://127.0.0.1:${port}/health`, args: [] },
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const rows = [];
  try {
    const call = (url, conns, seconds = duration) => {
      let next = 0;
      return loadWithCpu(url === apiUrl ? ctx.apiPid : baseline.child.pid, {
        url: `${url}${PATH}`,
        connections: conns,
        duration: seconds,
        requests: [
          {
            method: 'POST',
            path: PATH,
            headers: { 'content-type': 'application/json' },
            body: BODY,
            setupRequest: (req) => ({
              ...req,
              headers: { ...req.headers, authorization: `Bearer ${tokens[(next += 1) % USERS]}` },
            }),
          },
        ],
      });
    };
    // Same answer from both sides (200, a charged completion) before measuring.
    for (const url of [apiUrl, baseUrl]) {
      const res = await fetch(`${url}${PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens[0]}`, 'content-type': 'application/json' },
        body: BODY,
      });
      const body = await res.json().catch(() => null);
      if (res.status !== 200 || !(body?.credits_charged >= 1) || typeof body.content !== 'string') {
        throw new Error(`${url}${PATH} answered ${res.status}: ${JSON.stringify(body)}`);
      }
    }
    // Warm both sides up (JIT, pools) so the first measured row is not a cold start.
    await call(apiUrl, 16, 1);
    await call(baseUrl, 16, 1);
    for (const conns of connections) {
      const ours = await call(apiUrl, conns);
      const base = await call(baseUrl, conns);
      const r = ratio(ours.rps, base.rps);
      rows.push({
        figure: `POST ${PATH} (metered call, model answering at once from its own process), ${conns} conn`,
        value: `${Math.round(ours.rps)} req/s, p50 ${ours.p50} ms, p99 ${ours.p99} ms, ${cpu(ours)}${ours.errors ? `, ${ours.errors} errors` : ''}`,
        baseline: `express+jose+pg ${Math.round(base.rps)} req/s, p50 ${base.p50} ms, p99 ${base.p99} ms, ${cpu(base)}${base.errors ? `, ${base.errors} errors` : ''}`,
        ratio: r,
        goal: '>= 0.5x',
        met: r >= 0.5 && ours.errors === 0 && base.errors === 0,
      });
    }
  } finally {
    await baseline.stop();
  }
  return rows;
}
