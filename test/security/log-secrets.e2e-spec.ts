/**
 * Logs never hold credentials, secrets or message content (OWASP API2/API8: sensitive data in logs).
 *
 * The API and the worker run at LOG_LEVEL debug while the file drives the normal and the unusual paths
 * with known secrets: JWTs (valid, expired, tampered), API keys (used, revoked), signed and badly signed
 * webhooks of both providers (processed, refused, failing with a 500, malformed), unsubscribe and
 * checkout tokens, a request with credentials in the query string and cookies, metered completions
 * (succeeding and failing at the provider), billing actions against a failing provider, welcome and
 * broadcast e-mails, a 500 from an unexpected error. Then every log line written by both processes is
 * scanned for every one of those values, the configured secrets and the e-mail bodies that were sent.
 * (Every other security file also fails when its own logs hold a credential-shaped value: SecurityWorld.)
 *
 * Routes covered: GET /api/v1/me, PATCH /api/v1/me, POST/GET/DELETE /api/v1/api_keys,
 * POST /api/v1/feedback, POST /api/v1/saved_searches, POST /api/v1/billing/checkout-token,
 * POST /api/v1/billing/subscription/cancel, POST /api/v1/ai/completions, POST /api/v1/admin/broadcasts,
 * GET/POST /api/v1/email/unsubscribe, POST /webhooks/identity, POST /webhooks/billing (and the probe 500).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { checkoutToken, deliver, newSubId, signatureFor, subscriptionEvent } from '../support/billing.js';
import { grantCredits } from '../support/credits.js';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { ProbeModule } from '../support/probe.module.js';
import { TEST_SECRETS } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { BILLING_API_KEY, LLM_API_KEY, SecurityWorld } from './support/world.js';

describe('logs written during the security scenarios hold no secrets, tokens or message bodies', () => {
  let world: SecurityWorld;
  /** Every sensitive value the scenarios handled, by what it is. */
  const secrets: [string, string][] = [];
  const remember = (what: string, value: string) => {
    secrets.push([what, value]);
    // Parts of a token are as sensitive as the whole (the signature of a JWT, the MAC of a signed token).
    for (const part of value.split(/[.,;=]/).filter((p) => p.length >= 16))
      secrets.push([`${what} (part)`, part]);
  };

  beforeAll(async () => {
    world = await SecurityWorld.start({ logLevel: 'debug', worker: true, modules: [ProbeModule] });
    const identityKey = TEST_SECRETS.IDENTITY_WEBHOOK_SECRET;
    remember('identity webhook secret', identityKey);
    remember(
      'identity webhook key bytes',
      Buffer.from(identityKey.slice('whsec_'.length), 'base64').toString('utf8'),
    );
    remember('billing webhook secret', TEST_SECRETS.BILLING_WEBHOOK_SECRET);
    remember('unsubscribe secret', TEST_SECRETS.EMAIL_UNSUBSCRIBE_SECRET);
    remember('billing api key', BILLING_API_KEY);
    remember('llm api key', LLM_API_KEY);
    remember('e-mail api key', world.email.apiKey);
  });
  afterAll(() => world.close());

  it('drives the normal and the unusual paths', async () => {
    const { api, env, llm, billing, email } = world;
    const u = await world.user('logged');
    remember('jwt', u.auth.slice('Bearer '.length));
    await api.http
      .patch('/api/v1/me')
      .set('Authorization', u.auth)
      .send({ marketing_consent_given: true })
      .expect(200);

    const expired = await env.idp.token({ sub: u.sub }, { expiresIn: -60 });
    remember('expired jwt', expired);
    expect((await api.http.get('/api/v1/me').set('Authorization', `Bearer ${expired}`)).status).toBe(401);
    const [h, , s] = expired.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ sub: 'user_admin', email: 'admin@example.com' })).toString('base64url')}.${s}`;
    remember('tampered jwt', tampered);
    expect((await api.http.get('/api/v1/me').set('Authorization', `Bearer ${tampered}`)).status).toBe(401);

    const key = await world.apiKey(u.auth, 'logged key');
    remember('api key', key.secret);
    expect((await api.http.get('/api/v1/me').set('Authorization', key.auth)).status).toBe(200);
    expect((await api.http.delete(`/api/v1/api_keys/${key.id}`).set('Authorization', u.auth)).status).toBe(
      204,
    );
    expect((await api.http.get('/api/v1/me').set('Authorization', key.auth)).status).toBe(401);

    const queryToken = `qs-secret-${randomUUID()}`;
    remember('query-string credential', queryToken);
    await api.http
      .get(`/api/v1/me?access_token=${queryToken}&t=${queryToken}`)
      .set('Cookie', `session=${queryToken}`)
      .set('X-Api-Key', queryToken);

    const feedback = `feedback-body-${randomUUID()}`;
    const search = `search-body-${randomUUID()}`;
    remember('request body', feedback);
    remember('request body', search);
    await api.http
      .post('/api/v1/feedback')
      .set('Authorization', u.auth)
      .send({ message: feedback })
      .expect(201);
    await api.http
      .post('/api/v1/saved_searches')
      .set('Authorization', u.auth)
      .send({ name: 'n', query: search })
      .expect(201);

    // Checkout token: issued, then carried by a signed webhook; one with an unknown price fails (500).
    const issued = await api.http
      .post('/api/v1/billing/checkout-token')
      .set('Authorization', u.auth)
      .send({ tier: 'PRO' });
    expect(issued.status).toBe(200);
    remember('checkout token', issued.body.token);
    const subId = newSubId();
    billing.seed(subId);
    const created = subscriptionEvent({ type: 'subscription.created', subId, token: issued.body.token });
    const raw = JSON.stringify(created);
    const signature = signatureFor(raw);
    remember('paddle signature', signature);
    expect((await deliver(api, created, { signature, rawBody: raw })).status).toBe(200);
    const other = await world.user('logged-other');
    const failing = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      priceId: 'pri_unknown',
      token: checkoutToken(api, other.user),
    });
    // Accepted, then failed for good by the worker (an unknown price): its error lines are in the logs too.
    expect((await deliver(api, failing)).outcome).toBe('failed');
    expect((await deliver(api, created, { signature: 'ts=1;h1=00' })).status).toBe(401);
    expect(
      (await deliver(api, { event_id: 'evt_x', event_type: 'subscription.created', data: { id: 1 } })).status,
    ).toBe(400);

    // Identity webhooks: processed, refused, malformed.
    const identity = signIdentityEvent(
      identityUserEvent('user.created', `user_logwh_${randomUUID().slice(0, 6)}`, 'logwh@example.com'),
    );
    remember('identity signature', identity.headers['webhook-signature']);
    expect((await deliverIdentity(api, identity)).status).toBe(200);
    expect(
      (
        await api.http
          .post('/webhooks/identity')
          .set({ ...identity.headers, 'webhook-signature': 'v1,Zm9v' })
          .send(identity.body)
      ).status,
    ).toBe(401);
    const malformed = signIdentityEvent({ type: 'user.created', data: { id: 'x', email_addresses: 'nope' } });
    expect((await deliverIdentity(api, malformed)).status).toBe(400);

    // Billing actions against a provider that fails, then accepts.
    billing.failNext(500, 2);
    expect(
      (await api.http.post('/api/v1/billing/subscription/cancel').set('Authorization', u.auth).send({}))
        .status,
    ).toBe(503);
    expect(
      (await api.http.post('/api/v1/billing/subscription/cancel').set('Authorization', u.auth).send({}))
        .status,
    ).toBe(200);

    // Metered completions: success and provider failure; prompt and answer are content.
    await grantCredits(api, u.user.id, 100);
    const prompt = `prompt-content-${randomUUID()}`;
    const answer = `completion-content-${randomUUID()}`;
    remember('prompt', prompt);
    remember('completion', answer);
    llm.behaviour = { kind: 'ok', content: answer };
    const body = { messages: [{ role: 'user', content: prompt }], max_tokens: 16 };
    expect(
      (await api.http.post('/api/v1/ai/completions').set('Authorization', u.auth).send(body)).status,
    ).toBe(200);
    llm.behaviour = { kind: 'status', status: 500 };
    expect(
      (await api.http.post('/api/v1/ai/completions').set('Authorization', u.auth).send(body)).status,
    ).toBe(503);
    llm.behaviour = { kind: 'ok' };

    // E-mails: welcome (signup hook) and a broadcast; wait until the worker sent them.
    await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', await world.admin())
      .send({ template_key: 'newsletter', audience: {}, bypass_consent: false })
      .expect(201);
    await waitFor(
      async () => email.deliveries.some((d) => d.tags.some((t) => t.value === 'newsletter')),
      15_000,
    );
    await waitFor(
      async () => email.deliveries.some((d) => d.tags.some((t) => t.value === 'welcome')),
      15_000,
    );
    for (const delivery of email.deliveries) {
      for (const line of `${delivery.text}\n${delivery.html}`.split('\n').map((l) => l.trim())) {
        if (line.length >= 24) secrets.push(['e-mail body', line]);
      }
      const link = /t=([A-Za-z0-9_.-]+)/.exec(delivery.headers['List-Unsubscribe'] ?? '');
      if (link) remember('unsubscribe token in an e-mail', link[1]);
    }

    // Unsubscribe (after the broadcast, which needs the consent): a real token in the query string (GET page, POST), and a forged one.
    const unsubscribe = api.app.get(UnsubscribeTokens).sign(u.user.id);
    remember('unsubscribe token', unsubscribe);
    expect((await api.http.get('/api/v1/email/unsubscribe').query({ t: unsubscribe })).status).toBe(200);
    expect((await api.http.post('/api/v1/email/unsubscribe').query({ t: unsubscribe })).status).toBe(200);
    expect((await api.http.post('/api/v1/email/unsubscribe').query({ t: `${unsubscribe}x` })).status).toBe(
      400,
    );

    // An unexpected error (500).
    expect((await api.http.get('/api/v1/probe/boom').set('Authorization', u.auth)).status).toBe(500);
  });

  it('logged at debug level, with info, warning and error lines from both processes', () => {
    expect(world.api.config.logLevel).toBe('debug');
    const lines = world.env.logs.lines.map((l) => JSON.parse(l) as { level: number; msg?: string });
    const levels = new Set(lines.map((l) => l.level));
    expect(levels.has(30)).toBe(true); // info
    expect(levels.has(40)).toBe(true); // warn
    expect(levels.has(50)).toBe(true); // error
    expect(lines.length).toBeGreaterThan(50);
  });

  it('holds none of the secrets, tokens and bodies in any log line', () => {
    expect(secrets.length).toBeGreaterThan(30);
    const logs = world.env.logs.lines.join('\n');
    const leaked = [
      ...new Set(
        secrets.filter(([, value]) => logs.includes(value)).map(([what, v]) => `${what}: ${v.slice(0, 60)}`),
      ),
    ];
    expect(leaked).toEqual([]);
    expect(logs).not.toMatch(/Bearer [A-Za-z0-9_-]{20,}/);
    expect(logs).not.toMatch(/sk_live_[0-9a-f]{12}_[A-Za-z0-9_-]{20,}/);
    expect(logs).not.toMatch(/ts=\d+;h1=[0-9a-f]{64}/);
  });
});
