/**
 * OWASP API10:2023 Unsafe Consumption of APIs (spec rule 5: every provider answer and webhook body is
 * validated before use).
 *
 * A provider gone bad (off-contract JSON, HTML, redirects to an internal address, oversized bodies,
 * prototype keys, absurd numbers) may fail a request, never corrupt state, never be followed elsewhere,
 * never be passed through unchecked. Routes and consumers covered:
 * - POST /api/v1/ai/completions (language model): 502/503 and the reservation refunded; a refusal of the
 *   request (400/413/422) is quoted only as one short printable line and identifiers; an absurd token
 *   count never charges more than the reservation; prototype keys in the answer pollute nothing;
 * - POST /api/v1/billing/subscription/cancel (billing API): 502/503, the subscription row untouched, the
 *   attempt audited as failed;
 * - POST /webhooks/identity: user.updated events apply newer-wins (the user's updated_at, else the event
 *   time), so an old e-mail address delivered late never replaces the current one;
 * - every authenticated route's token check (identity provider JWKS): garbage key sets give 401/503,
 *   never 500;
 * - the e-mail provider client: off-contract ids are not stored;
 * - POST /webhooks/billing and POST /webhooks/identity: signed but off-schema bodies are 400, nothing
 *   applied (the fuzz suite throws random ones at them).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { EmailProvider } from '../../src/modules/email/providers/email-provider.js';
import {
  checkoutToken,
  deliver,
  newSubId,
  subscribe,
  subscriptionEvent,
  transactionEvent,
} from '../support/billing.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { IdentityKeySet } from '../../src/modules/auth/identity-key-set.js';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import type { ApiApp } from '../support/test-env.js';
import { Canary, type HostileAnswer, HostileServer } from './support/outbound.js';
import { expectRouteTableMatches } from './support/route-table.js';
import { SecurityWorld } from './support/world.js';

const MARK = 'HOSTILE-PROVIDER-MARK';
const BIG = 11 * 1024 * 1024;

describe('API10 unsafe consumption of APIs: provider answers are validated, bounded and never followed', () => {
  let world: SecurityWorld;
  let hostile: HostileServer;
  let canary: Canary;
  let api: ApiApp;

  beforeAll(async () => {
    [hostile, canary] = await Promise.all([HostileServer.start(), Canary.start()]);
    world = await SecurityWorld.start({ worker: true });
    expectRouteTableMatches(world.api.app);
    api = await world.env.startApi({
      config: world.env.configWith({
        LLM_BASE_URL: `${hostile.url}/v1`,
        BILLING_API_URL: hostile.url,
        EMAIL_API_URL: hostile.url,
      }),
    });
    api.app.get(HttpClient).backoffBaseMs = 1;
  });
  afterAll(async () => {
    await world.close();
    await Promise.all([hostile.close(), canary.close()]);
  });

  const completion = (content: string, usage: unknown = { prompt_tokens: 3, completion_tokens: 4 }) => ({
    id: 'chatcmpl-x',
    choices: [{ message: { role: 'assistant', content } }],
    usage,
  });

  const redirects = (): HostileAnswer[] =>
    [301, 302, 307, 308].map((status) => ({
      status,
      headers: { location: `http://127.0.0.1:${canary.port}/internal` },
      body: { data: { id: 'x' } },
    }));

  const oversized = (): HostileAnswer[] => [
    { status: 200, body: completion(`${MARK}${'x'.repeat(BIG)}`) },
    {
      status: 200,
      headers: { 'transfer-encoding': 'chunked' },
      body: completion(`${MARK}${'x'.repeat(BIG)}`),
    },
  ];

  it('refunds and answers 502/503 for every off-contract language-model answer', async () => {
    const owner = await world.user('ai-victim');
    await api.prisma.user.update({ where: { id: owner.user.id }, data: { currentTier: 'PRO' } });
    await grantCredits(api, owner.user.id, 100);
    const answers: HostileAnswer[] = [
      { status: 200, body: {} },
      { status: 200, body: null },
      { status: 200, body: `<html><body>${MARK}</body></html>`, headers: { 'content-type': 'text/html' } },
      { status: 200, body: { choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } } },
      { status: 200, body: completion(MARK, { prompt_tokens: -5, completion_tokens: 1 }) },
      { status: 200, body: completion(MARK, { prompt_tokens: '10', completion_tokens: '10' }) },
      { status: 200, body: completion(MARK, { prompt_tokens: 1.5, completion_tokens: 1 }) },
      { status: 200, body: completion(MARK, null) },
      {
        status: 200,
        body: {
          choices: [{ message: { content: { text: MARK } } }],
          usage: { prompt_tokens: 1, completion_tokens: 1 },
        },
      },
      { status: 401, body: { error: { message: MARK } } },
      { status: 500, body: { error: { message: MARK } } },
      ...redirects(),
      ...oversized(),
    ];
    for (const answer of answers) {
      hostile.answer = answer;
      const res = await api.http
        .post('/api/v1/ai/completions')
        .set('Authorization', owner.auth)
        .send({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
      const label = `${answer.status} ${JSON.stringify(answer.body).slice(0, 60)}`;
      expect({ label, status: res.status }).toEqual({ label, status: expect.any(Number) });
      expect([502, 503]).toContain(res.status);
      expect(res.text).not.toContain(MARK);
      const row = await api.prisma.user.findUniqueOrThrow({ where: { id: owner.user.id } });
      expect({ label, balance: row.creditBalance }).toEqual({ label, balance: 100 });
    }
    expect(canary.connections).toEqual([]);
    await expectLedgerConsistent(api.prisma);
  });

  it('quotes a refused request’s reason as one bounded printable line, never the rest of the answer', async () => {
    const owner = await world.user('ai-refused');
    await api.prisma.user.update({ where: { id: owner.user.id }, data: { currentTier: 'PRO' } });
    await grantCredits(api, owner.user.id, 100);
    const message = `${MARK}\r\n\u001b]8;;http://evil.example\u0007link\u001b]8;;\u0007\u202E${'x'.repeat(BIG / 1024)}`;
    hostile.answer = {
      status: 400,
      body: {
        // A content code, so the request is the one at fault and the message is quoted at all.
        error: {
          message,
          type: '<script>alert(1)</script>',
          code: 'context_length_exceeded',
          param: { $ne: 1 },
        },
        other: `${MARK}-ELSEWHERE`,
      },
    };
    const res = await api.http
      .post('/api/v1/ai/completions')
      .set('Authorization', owner.auth)
      .send({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'completion_rejected',
      provider_error: { status: 400, type: null, code: 'context_length_exceeded', param: null },
    });
    expect(res.body.detail).toContain(`${MARK} ]8;;http://evil.example link ]8;;`);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    expect(res.body.detail).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202A-\u202E]/);
    expect(res.body.detail.length).toBeLessThan(600);
    expect(res.text).not.toContain('ELSEWHERE');
    expect(res.text).not.toContain('<script>');
    const row = await api.prisma.user.findUniqueOrThrow({ where: { id: owner.user.id } });
    expect(row.creditBalance).toBe(100);
    await expectLedgerConsistent(api.prisma);
  });

  it('never charges more than the reservation, and prototype keys pollute nothing', async () => {
    const owner = await world.user('ai-absurd');
    await api.prisma.user.update({ where: { id: owner.user.id }, data: { currentTier: 'PRO' } });
    await grantCredits(api, owner.user.id, 100);
    hostile.answer = {
      status: 200,
      body: completion('fine', { prompt_tokens: 2 ** 52, completion_tokens: 2 ** 52 }),
    };
    const res = await api.http
      .post('/api/v1/ai/completions')
      .set('Authorization', owner.auth)
      .send({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
    expect(res.status).toBe(200);
    // The reservation for this request is 1 credit (a few bytes plus 16 tokens, rounded up).
    expect(res.body.credits_charged).toBe(1);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: owner.user.id } })).creditBalance).toBe(
      99,
    );

    hostile.answer = {
      status: 200,
      body: `{"__proto__":{"polluted":"yes","isAdmin":true},"constructor":{"prototype":{"polluted":"yes"}},"choices":[{"message":{"content":"ok","__proto__":{"polluted":"yes"}}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`,
    };
    const polluted = await api.http
      .post('/api/v1/ai/completions')
      .set('Authorization', owner.auth)
      .send({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 });
    expect(polluted.status).toBe(200);
    expect(polluted.body).toEqual({
      id: expect.any(String),
      content: 'ok',
      refusal: null,
      usage: { prompt_tokens: 1, completion_tokens: 1 },
      credits_charged: 1,
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });

  it('leaves the subscription untouched when the billing API answers off contract', async () => {
    const { user, subId } = await subscribe(api, 'PRO');
    const auth = await world.bearer(user.identityUserId, user.email);
    const before = await api.prisma.subscription.findUniqueOrThrow({
      where: { providerSubscriptionId: subId },
    });
    const answers: HostileAnswer[] = [
      { status: 200, body: {} },
      { status: 200, body: { data: { id: subId, status: 'hacked' } } },
      { status: 200, body: { data: { id: 42, status: 'canceled' } } },
      { status: 200, body: `<html>${MARK}</html>`, headers: { 'content-type': 'text/html' } },
      { status: 200, body: [{ data: { id: subId, status: 'canceled' } }] },
      { status: 422, body: { error: { detail: MARK } } },
      ...redirects(),
      {
        status: 200,
        body: { data: { id: subId, status: 'canceled', scheduled_change: null, pad: 'x'.repeat(BIG) } },
      },
    ];
    for (const answer of answers) {
      hostile.answer = answer;
      const res = await api.http
        .post('/api/v1/billing/subscription/cancel')
        .set('Authorization', auth)
        .send({ cancel_immediately: true });
      const label = `${answer.status} ${JSON.stringify(answer.body).slice(0, 60)}`;
      expect({ label, status: [502, 503].includes(res.status) }).toEqual({ label, status: true });
      expect(res.text).not.toContain(MARK);
    }
    const after = await api.prisma.subscription.findUniqueOrThrow({
      where: { providerSubscriptionId: subId },
    });
    expect(after).toEqual(before);
    const audits = await api.prisma.auditLog.findMany({
      where: { action: 'billing.cancel_requested', userId: user.identityUserId },
    });
    expect(audits).toHaveLength(answers.length);
    expect(audits.every((a) => (a.details as { status?: string }).status === 'failed')).toBe(true);
    expect(canary.connections).toEqual([]);
  });

  it('does not store off-contract ids from the e-mail provider', async () => {
    const provider = api.app.get(EmailProvider, { strict: false });
    expect(provider.name).toBe('resend');
    const message = {
      to: 'someone@example.com',
      from: 'Acme <news@acme.test>',
      subject: 'Hi',
      html: '<p>Hi</p>',
      text: 'Hi',
      headers: {},
      idempotencyKey: `sec-${randomUUID()}`,
    };
    for (const body of [{ id: { $gt: '' } }, { id: '' }, {}, [], { id: 42 }]) {
      hostile.answer = { status: 200, body };
      expect(await provider.send(message as never)).toEqual({ id: null });
    }
    hostile.answer = { status: 200, body: { data: [{ id: 'only-one' }] } };
    expect(await provider.sendBatch([message, message] as never, `sec-${randomUUID()}`)).toEqual([
      { id: null },
      { id: null },
    ]);
  });

  it('refuses signed but off-schema webhook bodies and applies nothing', async () => {
    const user = await world.user('schema');
    const token = checkoutToken(api, user.user);
    const bad = [
      subscriptionEvent({
        type: 'subscription.created',
        subId: newSubId(),
        token,
        status: 'hacked' as never,
      }),
      {
        ...subscriptionEvent({ type: 'subscription.created', subId: newSubId(), token }),
        data: { id: newSubId(), status: 'active', items: [] },
      },
      {
        ...subscriptionEvent({ type: 'subscription.activated', subId: newSubId(), token }),
        occurred_at: 'yesterday',
      },
      transactionEvent({ subId: newSubId(), total: '1e9999' }),
      transactionEvent({ subId: newSubId(), total: '99999999999' }),
    ];
    for (const event of bad) {
      const res = await deliver(api, event);
      expect({ type: (event as { event_type: string }).event_type, status: res.status }).toEqual({
        type: (event as { event_type: string }).event_type,
        status: 400,
      });
    }
    expect(await api.prisma.subscription.count({ where: { userId: user.user.id } })).toBe(0);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.user.id } })).currentTier).toBe(
      'FREE',
    );
    expect(await api.prisma.payment.count({ where: { userId: user.user.id } })).toBe(0);

    const sub = `user_schema_${randomUUID().slice(0, 6)}`;
    for (const email of ['not-an-email', `${'a'.repeat(400)}@example.com`]) {
      const delivery = signIdentityEvent(identityUserEvent('user.created', sub, email));
      const res = await deliverIdentity(api, delivery);
      expect(res.status).toBe(400);
    }
    expect(await api.prisma.user.count({ where: { identityUserId: sub } })).toBe(0);
  });

  it('applies identity user.updated newer-wins: an old address delivered late never comes back', async () => {
    const { api } = world;
    const sub = `user_order_${randomUUID().slice(0, 6)}`;
    const t0 = Date.now() - 60_000;
    const send = async (
      type: 'user.created' | 'user.updated',
      email: string,
      at: { updatedAt?: number; timestamp: number },
    ) => {
      const delivery = signIdentityEvent(identityUserEvent(type, sub, email, at));
      const res = await deliverIdentity(api, delivery);
      expect(res.status).toBe(200);
      return res.outcome;
    };
    const email = async () =>
      (await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } })).email;

    expect(await send('user.created', 'first@example.com', { updatedAt: t0, timestamp: t0 })).toBe(
      'processed',
    );
    expect(
      await send('user.updated', 'third@example.com', { updatedAt: t0 + 2000, timestamp: t0 + 2000 }),
    ).toBe('processed');
    // Delivered late (a retry, or simply unordered delivery): older than what was applied.
    expect(
      await send('user.updated', 'second@example.com', { updatedAt: t0 + 1000, timestamp: t0 + 1000 }),
    ).toBe('skipped');
    expect(await email()).toBe('third@example.com');
    // Without the user's updated_at the event time orders them.
    expect(await send('user.updated', 'fifth@example.com', { timestamp: t0 + 5000 })).toBe('processed');
    expect(await send('user.updated', 'fourth@example.com', { timestamp: t0 + 4000 })).toBe('skipped');
    expect(await email()).toBe('fifth@example.com');
    const archived = await api.prisma.webhookEvent.findMany({
      where: { provider: 'identity', status: 'SKIPPED' },
    });
    expect(archived.filter((row) => row.error?.startsWith('stale event')).length).toBeGreaterThanOrEqual(2);
  });

  it('answers 401/503, never 500, when the identity provider serves a garbage key set', async () => {
    // Last in the file: passport keeps one global 'jwt' strategy, so this app's key set wins from here on.
    const jwks = await world.env.startApi({
      config: world.env.configWith({ IDENTITY_JWKS_URL: `${hostile.url}/.well-known/jwks.json` }),
    });
    // One refresh per answer below, without waiting out the 5 s default cooldown each time.
    jwks.app.get(IdentityKeySet).cooldownMs = 50;
    const token = await world.env.idp.token({
      sub: `user_jwks_${randomUUID().slice(0, 6)}`,
      email: 'j@example.com',
    });
    const kid = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).kid as string;
    const answers: HostileAnswer[] = [
      { status: 200, body: { keys: 'nope' } },
      {
        status: 200,
        body: { keys: [{ kty: 'RSA', kid, n: 'garbage', e: 'AQAB', alg: 'RS256', use: 'sig' }] },
      },
      { status: 200, body: { keys: [{ kty: 'oct', kid, k: 'c2VjcmV0', alg: 'HS256' }] } },
      { status: 200, body: `<html>${MARK}</html>`, headers: { 'content-type': 'text/html' } },
      { status: 500, body: { error: MARK } },
      ...redirects(),
    ];
    for (const answer of answers) {
      hostile.answer = answer;
      const res = await jwks.http.get('/api/v1/me').set('Authorization', `Bearer ${token}`);
      const label = `${answer.status} ${JSON.stringify(answer.body).slice(0, 80)}`;
      expect({ label, status: [401, 503].includes(res.status) }).toEqual({ label, status: true });
      expect(res.text).not.toContain(MARK);
    }
    expect(canary.connections).toEqual([]);
    expect((await jwks.http.get('/health/ready')).status).toBe(200);
  });
});
