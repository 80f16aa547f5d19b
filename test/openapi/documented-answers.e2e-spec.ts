/**
 * openapi.json names, per route and status, the `code` values a route can answer (`x-problem-codes`). This
 * checks it against what the running service answers: every route is called by every kind of caller (none,
 * a malformed token, an unknown API key, a user, a user's API key, an administrator, an administrator's API
 * key, a user whose account is scheduled for deletion) with a random id and an empty body, and every error
 * answer must be one its operation documents, code included.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SecurityWorld } from '../security/support/world.js';

type Operation = {
  requestBody?: { content?: Record<string, unknown> };
  responses: Record<string, { 'x-problem-codes'?: string[] }>;
};
type Answer = { route: string; caller: string; status: number; code: string | undefined };

const PROBES = ['/health', '/health/ready', '/status'];

describe('the codes openapi.json documents', () => {
  let world: SecurityWorld;
  let paths: Record<string, Record<string, Operation>>;

  beforeAll(async () => {
    // No write or per-address limit: a 429 (documented everywhere) would hide the answer behind it.
    world = await SecurityWorld.start({
      env: { RATE_LIMIT_WRITES_PER_MINUTE: '0', RATE_LIMIT_PUBLIC_PER_MINUTE: '0' },
    });
    paths = (await world.api.http.get('/docs/openapi.json')).body.paths;
  });
  afterAll(() => world.close());

  /** Every operation once, as `caller`; account deletion last, since it changes the caller. */
  async function sweep(caller: string, authorization: string | null): Promise<Answer[]> {
    const operations = Object.entries(paths)
      .filter(([template]) => !PROBES.includes(template))
      .flatMap(([template, ops]) => Object.entries(ops).map(([method, op]) => ({ template, method, op })))
      .sort(
        (a, b) => Number(a.template === '/api/v1/account/me') - Number(b.template === '/api/v1/account/me'),
      );
    const answers: Answer[] = [];
    for (const { template, method, op } of operations) {
      const path = template
        .replace('{email}', 'nobody@example.com')
        .replace(/\{[^}]+\}/g, randomUUID())
        .replace(/(unsubscribe|confirm)$/, '$1?t=not-a-token');
      let req = world.api.http[method as 'get'](path);
      if (authorization) req = req.set('Authorization', authorization);
      const json = op.requestBody?.content?.['application/json'] !== undefined;
      const res = await (json ? req.send({}) : req);
      answers.push({
        route: `${method} ${template}`,
        caller,
        status: res.status,
        code: (res.body as { code?: string } | undefined)?.code,
      });
    }
    return answers;
  }

  const undocumented = (answers: Answer[]) =>
    answers
      .filter((a) => a.status >= 400)
      .filter((a) => {
        const [method, template] = a.route.split(' ');
        const codes = paths[template][method].responses[String(a.status)]?.['x-problem-codes'] ?? [];
        return a.code === undefined || !codes.includes(a.code);
      })
      .map((a) => `${a.caller}: ${a.route} answered ${a.status} ${a.code}`);

  it('documents every answer to every kind of caller, code included', async () => {
    const user = await world.user('sweeper');
    const userKey = await world.apiKey(user.auth, 'sweep');
    const adminKey = await world.apiKey(await world.admin(), 'sweep');
    const leaving = await world.user('leaving');
    expect(
      (await world.api.http.delete('/api/v1/account/me').set('Authorization', leaving.auth)).status,
    ).toBe(202);
    const answers = [
      ...(await sweep('anonymous', null)),
      ...(await sweep('malformed token', 'Bearer not-a-token')),
      ...(await sweep('unknown API key', `Bearer sk_live_000000000000_${'x'.repeat(43)}`)),
      ...(await sweep('user', user.auth)),
      ...(await sweep("user's API key", userKey.auth)),
      ...(await sweep('admin', await world.admin())),
      ...(await sweep("admin's API key", adminKey.auth)),
      ...(await sweep('deleted user', await world.bearer(leaving.sub))),
    ];
    expect(undocumented(answers)).toEqual([]);
    // The sweep reached past authentication: the routes' own refusals are among the answers.
    const seen = new Set(answers.map((a) => a.code));
    for (const code of [
      'unauthenticated',
      'invalid_token',
      'invalid_api_key',
      'account_deleted',
      'api_key_not_allowed',
      'admin_required',
      'validation_failed',
      'not_found',
      'no_active_subscription',
      'not_paused',
      'invalid_signature',
      'invalid_unsubscribe_token',
    ])
      expect({ code, seen: seen.has(code) }).toEqual({ code, seen: true });
  }, 120_000);

  it("documents the routes' own refusals past validation", async () => {
    const user = await world.user('refused');
    // The sweep's administrator deleted its own account (DELETE /api/v1/account/me): another identity with
    // the allowlisted address takes over.
    const admin = await world.admin('user_admin_refusals');
    const cases: {
      caller: string;
      auth: string;
      method: 'get' | 'post';
      template: string;
      body?: object;
      headers?: Record<string, string>;
    }[] = [
      {
        caller: 'user',
        auth: user.auth,
        method: 'post',
        template: '/api/v1/billing/subscription/change',
        body: { target_tier: 'FREE' },
      },
      {
        caller: 'user',
        auth: user.auth,
        method: 'post',
        template: '/api/v1/billing/credit-packs/checkout',
        body: { price_id: 'pri_none' },
      },
      { caller: 'user', auth: user.auth, method: 'get', template: '/api/v1/billing/subscription' },
      {
        caller: 'user',
        auth: user.auth,
        method: 'post',
        template: '/api/v1/ai/completions',
        body: { messages: [{ role: 'user', content: 'hi' }], max_tokens: 1_000_000 },
      },
      {
        caller: 'user',
        auth: user.auth,
        method: 'post',
        template: '/api/v1/ai/completions',
        body: { messages: [{ role: 'user', content: 'hi' }] },
        headers: { 'Idempotency-Key': 'not a key' },
      },
      {
        caller: 'admin',
        auth: admin,
        method: 'post',
        template: '/api/v1/admin/broadcasts',
        body: { template_key: 'newsletter', audience: {}, bypass_consent: true },
      },
      {
        caller: 'admin',
        auth: admin,
        method: 'post',
        template: '/api/v1/admin/broadcasts',
        body: { template_key: 'no_such_template', audience: {} },
      },
    ];
    const answers: Answer[] = [];
    for (const { caller, auth, method, template, body, headers } of cases) {
      const req = world.api.http[method](template).set({ Authorization: auth, ...headers });
      const res = await (body ? req.send(body) : req);
      answers.push({ route: `${method} ${template}`, caller, status: res.status, code: res.body?.code });
    }
    expect(answers.map((a) => `${a.route} ${a.status} ${a.code}`)).toEqual([
      'post /api/v1/billing/subscription/change 409 same_tier',
      'post /api/v1/billing/credit-packs/checkout 400 unknown_credit_pack',
      'get /api/v1/billing/subscription 404 no_subscription',
      'post /api/v1/ai/completions 400 max_tokens_exceeded',
      'post /api/v1/ai/completions 400 invalid_idempotency_key',
      'post /api/v1/admin/broadcasts 409 consent_required',
      'post /api/v1/admin/broadcasts 400 unknown_template',
    ]);
    expect(undocumented(answers)).toEqual([]);
  });
});
