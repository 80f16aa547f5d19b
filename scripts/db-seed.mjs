// `npm run db:seed`: demo data in the local database, put there through the running service's own code
// paths (with `npm start` running), so every invariant holds by construction: credit balances equal the
// sum of their ledger, tiers follow subscriptions, audit rows and outbox jobs are written as in
// production. What it creates:
//
//   free@example.com      FREE, marketing consent, saved searches
//   pro@example.com       PRO (checkout + one renewal: two monthly grants), completions, saved searches
//   team@example.com      TEAM, completions, saved searches
//   pastdue@example.com   PRO whose renewal payment failed (PAST_DUE)
//   canceled@example.com  PRO, canceled (back on FREE)
//   admin@example.com     the demo admin, who sends a newsletter broadcast; the seed waits until it finished
//
// Users sign in with development tokens, subscriptions arrive as signed billing webhooks
// (scripts/dev-billing.mjs), completions go through the language model `npm start` serves (its
// development stand-in unless LLM_BASE_URL is set) and are charged. Refuses to run twice (`npm run
// db:reset` first). Reads .env like `npm start`; DEV_BILLING_API_URL overrides the API address.
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { devBilling } from './dev-billing.mjs';
import { DEV_API_HINT, loadDotEnv, setting } from './lib/env.mjs';
import { DEMO_ADMIN, readDevSigningKey, signDevToken } from './local/identity.mjs';

export const SEED_USERS = [
  { email: 'free@example.com', tier: null, events: [], completions: 0, consent: true },
  { email: 'pro@example.com', tier: 'PRO', events: ['subscribe', 'renew'], completions: 2, consent: true },
  { email: 'team@example.com', tier: 'TEAM', events: ['subscribe'], completions: 1, consent: false },
  {
    email: 'pastdue@example.com',
    tier: 'PRO',
    events: ['subscribe', 'past_due'],
    completions: 0,
    consent: false,
  },
  {
    email: 'canceled@example.com',
    tier: 'PRO',
    events: ['subscribe', 'cancel'],
    completions: 0,
    consent: true,
  },
];

const SAVED_SEARCHES = [
  { name: 'Remote roles', query: 'remote engineer', filters: { remote: true } },
  { name: 'Berlin, senior', query: 'senior developer', filters: { city: 'Berlin' } },
];

class SeedError extends Error {}

const apiBase = () =>
  (setting('DEV_BILLING_API_URL') ?? `http://127.0.0.1:${setting('PORT', '3000')}`).replace(/\/+$/, '');

async function call(path, token, { method = 'GET', body, headers = {} } = {}) {
  const response = await fetch(`${apiBase()}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  }).catch((error) => {
    throw new Error(
      `${method} ${apiBase()}${path}: ${error.cause?.message ?? error.message} (${DEV_API_HINT})`,
      {
        cause: error,
      },
    );
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : null;
  if (!response.ok) throw new SeedError(`${method} ${path}: ${response.status} ${text}`);
  return json;
}

/** Seeds everything; `log` receives one line per step. Returns { users, broadcast }. */
export async function seed({ log = () => {}, timeoutMs = 60_000 } = {}) {
  const key = await readDevSigningKey();
  if (!key)
    throw new SeedError(
      'no development signing key yet: run `npm start` once (it creates .data/dev-identity/)',
    );
  const tokens = new Map();
  const tokenFor = async (email) => {
    if (!tokens.has(email)) tokens.set(email, await signDevToken(key, { email, ttl: 3600 }));
    return tokens.get(email);
  };

  // Once only: a second run would buy a second subscription for the same people.
  const marker = await tokenFor(SEED_USERS[1].email);
  await call('/api/v1/me', marker);
  const existing = await fetch(`${apiBase()}/api/v1/saved_searches`, {
    headers: { authorization: `Bearer ${marker}` },
  }).then((r) => r.json());
  if (existing.total > 0)
    throw new SeedError('the database already holds the demo data: `npm run db:reset` first');

  const users = [];
  for (const user of SEED_USERS) {
    const token = await tokenFor(user.email);
    await call('/api/v1/me', token); // created on first sight, as the identity provider's users are
    if (user.consent)
      await call('/api/v1/me', token, {
        method: 'PATCH',
        body: { marketing_consent_given: true, marketing_consent_source: 'seed' },
      });
    for (const event of user.events) {
      await devBilling({ email: user.email, tier: user.tier, event, timeoutMs });
      log(`${user.email}: ${event} ${user.tier}`);
    }
    for (const search of SAVED_SEARCHES)
      await call('/api/v1/saved_searches', token, { method: 'POST', body: search });
    for (let i = 0; i < user.completions; i += 1) {
      const answer = await call('/api/v1/ai/completions', token, {
        method: 'POST',
        body: {
          messages: [{ role: 'user', content: `Seed question ${i + 1}: suggest a search.` }],
          max_tokens: 64,
        },
      });
      log(`${user.email}: completion charged ${answer.credits_charged} credit(s)`);
    }
    const me = await call('/api/v1/me', token);
    users.push(me);
    log(
      `${user.email}: ${me.current_tier} with ${me.credit_balance} credits, ${SAVED_SEARCHES.length} saved searches`,
    );
  }

  const admin = await tokenFor(DEMO_ADMIN.email);
  await call('/api/v1/me', admin);
  const run = await call('/api/v1/admin/broadcasts', admin, {
    method: 'POST',
    body: { template_key: 'newsletter', audience: {} },
  });
  const deadline = Date.now() + timeoutMs;
  let broadcast = run;
  while (!broadcast.finished_at) {
    if (Date.now() > deadline)
      throw new SeedError(
        `broadcast ${run.id} did not finish within ${timeoutMs / 1000} s (is the worker running?)`,
      );
    await sleep(250);
    broadcast = await call(`/api/v1/admin/broadcasts/${run.id}`, admin);
  }
  log(`broadcast ${broadcast.id}: ${broadcast.status}, ${JSON.stringify(broadcast.counts)}`);
  return { users, broadcast };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  loadDotEnv();
  seed({ log: (line) => process.stdout.write(`db:seed: ${line}\n`) }).then(
    () => {
      process.stdout.write('db:seed: done; sign in as any of them with npm run -s dev:token -- <email>\n');
      process.exit(0);
    },
    (error) => {
      process.stderr.write(`db:seed: ${error.message}\n`);
      process.exit(error instanceof SeedError ? 2 : 1);
    },
  );
}
