// `npm run dev:billing -- <email> <TIER> [subscribe|renew|past_due|cancel]`: what the billing provider
// would send when that user buys, renews, fails to pay or cancels, without a provider account.
// `npm run dev:billing -- <email> <pack price id>` buys a credit pack (GET /api/v1/billing/credit-packs
// lists them; `npm start` configures pri_dev_pack_s and pri_dev_pack_l unless BILLING_CREDIT_PACKS is set). Each event
// is a Paddle Billing notification built on the provider's published payloads (the fixtures of
// test/contracts/fixtures/paddle, see their README), signed `Paddle-Signature: ts=..;h1=..` with
// BILLING_WEBHOOK_SECRET (the development default unless set) and POSTed to the running API's
// /webhooks/billing: the real intake, inbox and worker apply it. The checkout is the frontend's: a
// development token (`npm run dev:token`) signs the user in, POST /api/v1/billing/checkout gives the price
// and the checkout token that the subscription carries back in custom_data.
//
//   subscribe  subscription.created (active) + transaction.completed (first payment)   [default]
//   renew      subscription.updated (next period) + transaction.completed (subscription_recurring):
//              the tier's monthly credits are granted again
//   past_due   subscription.past_due (a renewal payment failed)
//   cancel     subscription.canceled (immediately)
//
// Reads .env like `npm start`. DEV_BILLING_API_URL overrides the API address (default
// http://127.0.0.1:$PORT). Waits until the worker has applied the events and prints the subscription.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { DEV_BILLING_WEBHOOK_SECRET } from './lib/dev-secrets.mjs';
import { DEV_API_HINT, loadDotEnv, ROOT, setting } from './lib/env.mjs';
import { paddleSignature } from './lib/paddle.mjs';
import { readDevSigningKey, signDevToken } from './local/identity.mjs';

export const EVENTS = ['subscribe', 'renew', 'past_due', 'cancel'];
const USAGE =
  `usage: npm run dev:billing -- <email> <tier> [${EVENTS.join('|')}]\n` +
  '       npm run dev:billing -- <email> <pack price id>   (a credit pack; see GET /api/v1/billing/credit-packs)';
const FIXTURES = join(ROOT, 'test', 'contracts', 'fixtures', 'paddle');
const MONTH_MS = 30 * 86_400_000;

const fixture = (name) => JSON.parse(readFileSync(join(FIXTURES, `node-sdk.${name}.json`), 'utf8'));
const paddleId = (prefix) => `${prefix}_dev${randomBytes(12).toString('hex')}`;

class UsageError extends Error {}

/** The published notification `name` rewritten for this user: ids, dates, price and checkout token. */
function notification(name, eventType, now, data) {
  const template = fixture(name);
  return {
    ...template,
    event_id: paddleId('evt'),
    event_type: eventType,
    occurred_at: now.toISOString(),
    notification_id: paddleId('ntf'),
    data: { ...template.data, ...data },
  };
}

/** The first item of the fixture's subscription, priced with `priceId`. */
function subscriptionItems(template, priceId, period) {
  const [item] = template.data.items;
  return [
    {
      ...item,
      quantity: 1,
      price: { ...item.price, id: priceId },
      next_billed_at: period?.ends_at ?? null,
      previously_billed_at: period?.starts_at ?? null,
    },
  ];
}

export function subscriptionEvent({ kind, subscriptionId, customerId, priceId, checkoutToken, period, now }) {
  const names = {
    'subscription.created': ['subscription-created', 'active'],
    'subscription.updated': ['subscription-updated', 'active'],
    'subscription.past_due': ['subscription-past-due', 'past_due'],
    'subscription.canceled': ['subscription-canceled', 'canceled'],
  };
  const [name, status] = names[kind];
  const template = fixture(name);
  return notification(name, kind, now, {
    id: subscriptionId,
    status,
    customer_id: customerId,
    items: subscriptionItems(template, priceId, period),
    current_billing_period: status === 'canceled' ? null : period,
    next_billed_at: status === 'active' ? period.ends_at : null,
    scheduled_change: null,
    paused_at: null,
    canceled_at: status === 'canceled' ? now.toISOString() : null,
    updated_at: now.toISOString(),
    custom_data: checkoutToken ? { checkout_token: checkoutToken } : null,
  });
}

export function transactionEvent({
  subscriptionId,
  customerId,
  priceId,
  checkoutToken,
  origin,
  period,
  now,
}) {
  const template = fixture('transaction-completed');
  const [item] = template.data.items;
  return notification('transaction-completed', 'transaction.completed', now, {
    id: paddleId('txn'),
    status: 'completed',
    origin,
    customer_id: customerId,
    subscription_id: subscriptionId,
    items: [{ ...item, quantity: 1, price: { ...item.price, id: priceId } }],
    billed_at: now.toISOString(),
    billing_period: period,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    custom_data: checkoutToken ? { checkout_token: checkoutToken } : null,
  });
}

/** What a development run talks to: the API, its webhook secret, a token for the user. */
function target() {
  return {
    api: (setting('DEV_BILLING_API_URL') ?? `http://127.0.0.1:${setting('PORT', '3000')}`).replace(
      /\/+$/,
      '',
    ),
    secret: setting('BILLING_WEBHOOK_SECRET', DEV_BILLING_WEBHOOK_SECRET),
  };
}

async function call(api, path, { token, method = 'GET', body } = {}) {
  let response;
  try {
    response = await fetch(`${api}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(10_000),
    });
  } catch (error) {
    throw new Error(
      `${method} ${api}${path}: ${error.cause?.message ?? error.message} (${DEV_API_HINT})`,
      {
        cause: error,
      },
    );
  }
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: response.status, body: json ?? text };
}

async function deliver(api, secret, event) {
  const raw = JSON.stringify(event);
  const ts = Math.floor(Date.now() / 1000);
  const response = await fetch(`${api}/webhooks/billing`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'paddle-signature': `ts=${ts};h1=${paddleSignature(secret, ts, raw)}`,
    },
    body: raw,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (response.status !== 200)
    throw new Error(`POST /webhooks/billing ${event.event_type}: ${response.status} ${text}`);
  return event;
}

/** Polls GET /billing/subscription until `done(subscription)`; the worker applies webhooks asynchronously. */
async function settled(api, token, done, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = null;
  while (Date.now() < deadline) {
    const { status, body } = await call(api, '/api/v1/billing/subscription', { token });
    // 404 no_subscription: nothing current any more (a canceled subscription may stop being shown).
    last = status === 200 ? body : null;
    if (done(last)) return last;
    await sleep(200);
  }
  throw new Error(
    `the worker did not apply the events within ${timeoutMs / 1000} s (is the worker running? last seen: ` +
      `${JSON.stringify(last)})`,
  );
}

/** Waits until the caller's ledger holds the grant keyed on `jobId` (the renewal's transaction id). */
async function granted(api, token, jobId, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { status, body } = await call(api, '/api/v1/credits?page_size=200', { token });
    if (status === 200 && body.items.some((item) => item.job_id === jobId)) return;
    await sleep(200);
  }
  throw new Error(`the worker did not grant the renewal's credits within ${timeoutMs / 1000} s`);
}

/**
 * Sends `event` for `email` buying `tier`; returns { subscription, sent } (sent: the notifications).
 * `log` receives progress lines.
 */
export async function devBilling({ email, tier, event = 'subscribe', log = () => {}, timeoutMs = 30_000 }) {
  if (!EVENTS.includes(event)) throw new UsageError(`unknown event "${event}"\n${USAGE}`);
  const { api, secret } = target();
  const key = await readDevSigningKey();
  if (!key)
    throw new Error('no development signing key yet: run `npm start` once (it creates .data/dev-identity/)');
  const token = await signDevToken(key, { email, ttl: 600 });
  const me = await call(api, '/api/v1/me', { token });
  if (me.status !== 200) throw new Error(`GET /api/v1/me: ${me.status} ${JSON.stringify(me.body)}`);
  const packs = await call(api, '/api/v1/billing/credit-packs', { token });
  const pack = packs.status === 200 ? packs.body.items.find((item) => item.price_id === tier) : undefined;
  if (pack) {
    if (event !== 'subscribe') throw new UsageError(`a credit pack is bought, not ${event}\n${USAGE}`);
    return buyPack({ api, secret, token, pack, log, timeoutMs });
  }
  const wantedTier = tier.toUpperCase();
  const now = new Date();
  const sent = [];

  if (event === 'subscribe') {
    const checkout = await call(api, '/api/v1/billing/checkout', {
      token,
      method: 'POST',
      body: { tier: wantedTier },
    });
    if (checkout.status !== 200)
      throw new UsageError(
        `POST /api/v1/billing/checkout {tier: ${wantedTier}}: ${checkout.status} ${JSON.stringify(checkout.body)}`,
      );
    const { price_id: priceId, custom_data: customData } = checkout.body;
    const base = {
      subscriptionId: paddleId('sub'),
      customerId: paddleId('ctm'),
      priceId,
      checkoutToken: customData.checkout_token,
      period: { starts_at: now.toISOString(), ends_at: new Date(now.getTime() + MONTH_MS).toISOString() },
      now,
    };
    sent.push(await deliver(api, secret, subscriptionEvent({ ...base, kind: 'subscription.created' })));
    sent.push(await deliver(api, secret, transactionEvent({ ...base, origin: 'web' })));
    log(
      `sent subscription.created and transaction.completed for ${base.subscriptionId} (${wantedTier}, ${priceId})`,
    );
    const subscription = await settled(
      api,
      token,
      (s) => s?.provider_subscription_id === base.subscriptionId && s.status === 'ACTIVE',
      timeoutMs,
    );
    return { subscription, sent };
  }

  const current = await call(api, '/api/v1/billing/subscription', { token });
  if (current.status !== 200)
    throw new UsageError(
      `${email} has no subscription to ${event}: run \`npm run dev:billing -- ${email} ${wantedTier}\` first`,
    );
  const row = current.body;
  if (row.tier !== wantedTier)
    throw new UsageError(`${email}'s subscription is ${row.tier}, not ${wantedTier}`);
  const customerId = paddleId('ctm');
  const base = {
    subscriptionId: row.provider_subscription_id,
    customerId,
    priceId: row.price_id,
    checkoutToken: null,
    now,
  };
  const end = row.current_period_end ? new Date(row.current_period_end) : now;
  if (event === 'renew') {
    const start = end.getTime() > now.getTime() ? end : now;
    const period = {
      starts_at: start.toISOString(),
      ends_at: new Date(start.getTime() + MONTH_MS).toISOString(),
    };
    sent.push(
      await deliver(api, secret, subscriptionEvent({ ...base, period, kind: 'subscription.updated' })),
    );
    const renewal = transactionEvent({ ...base, period, origin: 'subscription_recurring' });
    sent.push(await deliver(api, secret, renewal));
    log(`sent subscription.updated and transaction.completed (renewal) for ${base.subscriptionId}`);
    const subscription = await settled(
      api,
      token,
      (s) => !!s?.current_period_end && Date.parse(s.current_period_end) === Date.parse(period.ends_at),
      timeoutMs,
    );
    // The two events are applied independently: done once the renewal's credits are granted too.
    await granted(api, token, renewal.data.id, timeoutMs);
    return { subscription, sent };
  }
  const period = {
    starts_at: row.current_period_start ?? now.toISOString(),
    ends_at: end.toISOString(),
  };
  const kind = event === 'past_due' ? 'subscription.past_due' : 'subscription.canceled';
  const expected = event === 'past_due' ? 'PAST_DUE' : 'CANCELED';
  sent.push(await deliver(api, secret, subscriptionEvent({ ...base, period, kind })));
  log(`sent ${kind} for ${base.subscriptionId}`);
  const subscription = await settled(
    api,
    token,
    (s) => (s === null ? expected === 'CANCELED' : s.status === expected),
    timeoutMs,
  );
  return { subscription, sent };
}

/**
 * A credit pack: the pack checkout's token, then the one-time `transaction.completed` (no subscription)
 * that the provider sends when the payment succeeds; waits until the credits are in GET /api/v1/credits.
 */
async function buyPack({ api, secret, token, pack, log, timeoutMs }) {
  const before = await call(api, '/api/v1/credits?page_size=1', { token });
  if (before.status !== 200) throw new Error(`GET /api/v1/credits: ${before.status} ${JSON.stringify(before.body)}`);
  const checkout = await call(api, '/api/v1/billing/credit-packs/checkout', {
    token,
    method: 'POST',
    body: { price_id: pack.price_id },
  });
  if (checkout.status !== 200)
    throw new Error(`POST /api/v1/billing/credit-packs/checkout: ${checkout.status} ${JSON.stringify(checkout.body)}`);
  const now = new Date();
  const event = transactionEvent({
    subscriptionId: null,
    customerId: paddleId('ctm'),
    priceId: pack.price_id,
    checkoutToken: checkout.body.custom_data.checkout_token,
    origin: 'web',
    period: null,
    now,
  });
  await deliver(api, secret, event);
  log(`sent transaction.completed for the pack ${pack.price_id} (${pack.credits} credits, ${event.data.id})`);
  const wanted = before.body.purchased_remaining + pack.credits;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const credits = await call(api, '/api/v1/credits?page_size=1', { token });
    if (credits.status === 200 && credits.body.purchased_remaining >= wanted) {
      return { subscription: null, credits: credits.body, sent: [event] };
    }
    await sleep(200);
  }
  throw new Error(`the worker did not grant the pack within ${timeoutMs / 1000} s (is the worker running?)`);
}

async function main(args) {
  loadDotEnv();
  const [email, tier, event = 'subscribe', ...rest] = args;
  if (!email || !tier || rest.length > 0 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(USAGE);
  const { subscription, credits } = await devBilling({
    email,
    tier,
    event,
    log: (line) => process.stdout.write(`dev-billing: ${line}\n`),
  });
  if (credits) {
    process.stdout.write(
      `dev-billing: ${email}: balance ${credits.balance} (${credits.plan_remaining} plan, ` +
        `${credits.purchased_remaining} purchased; GET /api/v1/credits)\n`,
    );
    return;
  }
  process.stdout.write(
    subscription
      ? `dev-billing: ${email}: ${subscription.tier} ${subscription.status}, period ends ` +
          `${subscription.current_period_end ?? '-'} (GET /api/v1/billing/subscription)\n`
      : `dev-billing: ${email}: no current subscription any more (FREE)\n`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(`dev-billing: ${error.message}\n`);
      process.exit(error instanceof UsageError ? 2 : 1);
    },
  );
}
