/**
 * The text of a JSON request body, on every authenticated and admin route: JSON is UTF-8 (RFC 8259), so a
 * body declared in another charset is 415, bytes that are not UTF-8 are 400, and a string or key holding
 * an unpaired UTF-16 surrogate (`"a\ud800"`, only writable as a JSON escape) is 400 naming the field. Each
 * refusal changes nothing. Before, the body was decoded as UTF-8 whatever its charset, invalid bytes and
 * unpaired surrogates in text columns were stored as U+FFFD, while JSON fields refused the surrogates.
 * The same holds for the percent-escapes of a query string: a run that is not UTF-8 is 400 naming the
 * parameter (the query decoded it as U+FFFD). A form body on a JSON route is 415 (before, it was decoded
 * and validated like JSON); the routes that take a form never decode it.
 * The webhook receivers keep their raw bytes (signatures) and their own rules.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { createMember } from '../factories/audience.factory.js';
import { signIdentityEvent, identityUserEvent } from '../support/identity-webhook.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const PROBLEM = /^application\/problem\+json/;

describe('request text (JSON, query strings, forms): UTF-8 only, no unpaired surrogates, nothing stored on a refusal', () => {
  let env: TestEnv;
  let api: ApiApp;
  let auth: string;
  let userId: string;
  let searchId: string;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    auth = await api.bearer('user_text');
    await api.http.get('/api/v1/me').set('Authorization', auth).expect(200);
    userId = (await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_text' } })).id;
    const search = await api.http
      .post('/api/v1/saved_searches')
      .set('Authorization', auth)
      .send({ name: 'kept', query: 'q' });
    expect(search.status).toBe(201);
    searchId = search.body.id;
  });
  afterAll(() => env.close());

  /** Every row a refused request could have written or changed for the user. */
  const snapshot = async () => ({
    user: await api.prisma.user.findUniqueOrThrow({ where: { id: userId } }),
    searches: await api.prisma.savedSearch.findMany({ where: { userId }, orderBy: { id: 'asc' } }),
    workspaces: await api.prisma.workspace.findMany({ where: { userId }, orderBy: { id: 'asc' } }),
    keys: await api.prisma.apiKey.count({ where: { userId } }),
    feedback: await api.prisma.feedback.count({ where: { userId } }),
    broadcasts: await api.prisma.broadcastRun.count(),
    audit: await api.prisma.auditLog.count(),
  });

  /** A POST with exactly these bytes and this Content-Type (superagent would JSON-encode a Buffer). */
  const createWith = (contentType: string, bytes: Buffer, path = '/api/v1/workspaces') =>
    api.http
      .post(path)
      .set('Authorization', auth)
      .set('Content-Type', contentType)
      .serialize((body: unknown) => body as string)
      .send(bytes as unknown as string);

  const expectProblem = (label: string, res: Response, status: number, code: string) => {
    expect({ label, status: res.status, type: res.headers['content-type'], code: res.body.code }).toEqual({
      label,
      status,
      type: expect.stringMatching(PROBLEM),
      code,
    });
  };

  it('refuses an unpaired surrogate in any string or key with 400 naming the field, storing nothing', async () => {
    const admin = await api.bearer('user_text_admin', 'admin@example.com');
    const cases: [string, string, string, unknown, string][] = [
      ['POST', '/api/v1/saved_searches', auth, { name: 'a\ud800', query: 'q' }, 'name'],
      ['POST', '/api/v1/saved_searches', auth, { name: 'n', query: '\udc00q' }, 'query'],
      ['PATCH', `/api/v1/saved_searches/${searchId}`, auth, { name: 'x\udfff' }, 'name'],
      [
        'POST',
        '/api/v1/saved_searches',
        auth,
        { name: 'n', query: 'q', filters: { a: ['\ud800'] } },
        'filters.a.0',
      ],
      ['POST', '/api/v1/workspaces', auth, { name: 'lone \udfff' }, 'name'],
      ['POST', '/api/v1/workspaces', auth, { name: 'n', description: '\ud800 x' }, 'description'],
      ['POST', '/api/v1/api_keys', auth, { name: 'key \ud800' }, 'name'],
      ['POST', '/api/v1/feedback', auth, { message: 'm\ud800' }, 'message'],
      ['POST', '/api/v1/feedback', auth, { message: 'ok', page: '/p\udfff' }, 'page'],
      ['POST', '/api/v1/account/me/signup-metadata', auth, { utm_source: 'news\ud800' }, 'utm_source'],
      // A key, and the order of a pair reversed (low before high) is two unpaired surrogates.
      ['POST', '/api/v1/workspaces', auth, { name: 'n', ['\udfffx']: 1 }, '\ufffdx'],
      ['POST', '/api/v1/workspaces', auth, { name: '\ude00\ud83d' }, 'name'],
      [
        'POST',
        '/api/v1/admin/broadcasts',
        admin,
        { template_key: 'newsletter', audience: { tiers: ['PRO\ud800'] } },
        'audience.tiers.0',
      ],
    ];
    const before = await snapshot();
    for (const [method, path, authorization, body, field] of cases) {
      const label = `${method} ${path} ${field}`;
      const req = method === 'POST' ? api.http.post(path) : api.http.patch(path);
      const res = await req.set('Authorization', authorization).send(body as object);
      expectProblem(label, res, 400, 'validation_failed');
      expect({ label, errors: res.body.errors }).toEqual({
        label,
        errors: [{ field, message: `${field} must not contain unpaired UTF-16 surrogates` }],
      });
    }
    expect(await snapshot()).toEqual(before);
  });

  it('stores surrogate pairs, written raw or as escapes, and an escaped backslash before "ud800"', async () => {
    const raw = await api.http
      .post('/api/v1/workspaces')
      .set('Authorization', auth)
      .set('Content-Type', 'application/json')
      .send('{"name":"pair \\ud83d\\ude00 and 😀","description":"\\\\ud800 is text"}');
    expect(raw.status).toBe(201);
    expect(raw.body).toMatchObject({ name: 'pair 😀 and 😀', description: '\\ud800 is text' });
  });

  it('refuses a JSON body declared in a charset other than UTF-8 with 415, storing nothing', async () => {
    const before = await snapshot();
    for (const charset of ['latin1', 'iso-8859-1', 'foo', 'utf-16', 'UTF-32', '"windows-1252"', '']) {
      const res = await createWith(
        `application/json; charset=${charset}`,
        Buffer.from('{"name":"café"}', 'latin1'),
      );
      expectProblem(charset, res, 415, 'unsupported_media_type');
      expect(res.body.detail).toMatch(/UTF-8/);
    }
    expect(await snapshot()).toEqual(before);
    for (const [i, charset] of ['utf-8', 'UTF-8', '"utf-8"', 'utf8'].entries()) {
      const body = Buffer.from(`{"message":"café ${i}"}`);
      const res = await createWith(`application/json;charset=${charset}`, body, '/api/v1/feedback');
      expect({ charset, status: res.status, message: res.body.message }).toEqual({
        charset,
        status: 201,
        message: `café ${i}`,
      });
    }
    // US-ASCII bytes are UTF-8.
    const ascii = Buffer.from('{"message":"plain"}');
    const res = await createWith('application/json; charset=us-ascii', ascii, '/api/v1/feedback');
    expect({ status: res.status, message: res.body.message }).toEqual({ status: 201, message: 'plain' });
  });

  it('refuses bytes that are not UTF-8 with 400 instead of storing U+FFFD, storing nothing', async () => {
    const before = await snapshot();
    const bodies: [string, Buffer][] = [
      ['Latin-1 é', Buffer.from('{"name":"café"}', 'latin1')],
      [
        'a lone continuation byte',
        Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0x80]), Buffer.from('"}')]),
      ],
      [
        'an overlong slash',
        Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
      ],
      [
        'an encoded surrogate',
        Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
      ],
      [
        'a cut-off sequence',
        Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xe2, 0x82]), Buffer.from('"}')]),
      ],
    ];
    for (const [label, body] of bodies) {
      const res = await createWith('application/json', body);
      expectProblem(label, res, 400, 'validation_failed');
      expect(res.body.detail).toMatch(/not valid UTF-8/);
    }
    expect(await snapshot()).toEqual(before);
  });

  /**
   * Percent-escapes whose bytes are not UTF-8: a byte no UTF-8 character has, a lead byte without its
   * continuation, an encoded surrogate, a sequence cut short, an overlong slash.
   */
  const INVALID_ESCAPES = ['%FF', '%C3%28', '%ED%A0%80', '%E2%82', '%C0%AF'];

  it('refuses a query string whose percent-escapes are not UTF-8 with 400 on every route, changing nothing', async () => {
    const extra = await api.http
      .post('/api/v1/saved_searches')
      .set('Authorization', auth)
      .send({ name: 'deleted only by a valid request', query: 'q' });
    expect(extra.status).toBe(201);
    const before = await snapshot();
    for (const escape of INVALID_ESCAPES) {
      const requests: [string, () => Promise<Response>][] = [
        [
          'a list filter',
          () => api.http.get(`/api/v1/saved_searches?page=${escape}`).set('Authorization', auth),
        ],
        [
          'a create',
          () =>
            api.http
              .post(`/api/v1/workspaces?ref=x${escape}`)
              .set('Authorization', auth)
              .send({ name: 'made with a bad query' }),
        ],
        [
          'a delete',
          () =>
            api.http
              .delete(`/api/v1/saved_searches/${extra.body.id}?ref=${escape}`)
              .set('Authorization', auth),
        ],
        ['a public token', () => api.http.get(`/api/v1/email/unsubscribe?t=${escape}`)],
        ['a path nobody serves', () => api.http.get(`/no-such-route?a=1&${escape}=x`)],
      ];
      for (const [label, send] of requests) {
        const res = await send();
        expectProblem(`${label}, ${escape}`, res, 400, 'validation_failed');
        expect(res.body.detail).toContain('The query string is not valid UTF-8');
        expect(res.body.detail).toContain(escape);
      }
    }
    // The parameter is named when the escape is in its value.
    const named = await api.http
      .get('/api/v1/saved_searches?page_size=10&page=%C3%28')
      .set('Authorization', auth);
    expect(named.body.errors).toEqual([{ field: 'page', message: expect.stringContaining('%C3%28') }]);
    expect(await snapshot()).toEqual(before);
  });

  /** A form POST of exactly these bytes, in UTF-8 unless a charset is named. */
  const formWith = (body: string | Buffer, charset?: string, path?: string) =>
    createWith(
      `application/x-www-form-urlencoded${charset ? `; charset=${charset}` : ''}`,
      Buffer.isBuffer(body) ? body : Buffer.from(body),
      path,
    );

  it('refuses a form body on a JSON route with 415 before decoding it, storing nothing', async () => {
    const before = await snapshot();
    // Valid and invalid escapes, raw Latin-1 bytes, any charset: no JSON route decodes a form any more.
    const forms: [string, Buffer, string | undefined][] = [
      ...INVALID_ESCAPES.map((escape): [string, Buffer, undefined] => [
        escape,
        Buffer.from(`description=ok&name=caf${escape}`),
        undefined,
      ]),
      ['a raw Latin-1 byte', Buffer.from('name=café', 'latin1'), undefined],
      ['a UTF-8 escape', Buffer.from('message=caf%C3%A9+utf8'), undefined],
      ['an ISO-8859-1 form', Buffer.from('message=caf%E9+latin1'), 'iso-8859-1'],
    ];
    for (const [label, body, charset] of forms) {
      for (const path of ['/api/v1/workspaces', '/api/v1/feedback']) {
        const res = await formWith(body, charset, path);
        expectProblem(`${label} ${path}`, res, 415, 'unsupported_media_type');
      }
    }
    expect(await snapshot()).toEqual(before);
  });

  it('keeps valid escapes in a query string: a UTF-8 é', async () => {
    const listed = await api.http
      .get('/api/v1/saved_searches?page=%31&page_size=%35%30')
      .set('Authorization', auth);
    expect({ status: listed.status, page_size: listed.body.page_size }).toEqual({
      status: 200,
      page_size: 50,
    });
    // The whitelist names an unknown parameter as it was decoded: é, not U+FFFD.
    const unknown = await api.http.get('/api/v1/saved_searches?caf%C3%A9=1').set('Authorization', auth);
    expectProblem('an unknown parameter', unknown, 400, 'validation_failed');
    expect(JSON.stringify(unknown.body.errors)).toContain('café');
  });

  it('still unsubscribes on a valid one-click POST (RFC 8058) whatever its ignored body holds; a bad query changes nothing', async () => {
    const tokens = api.app.get(UnsubscribeTokens);
    const member = await createMember(api.prisma, 'text_one_click', { consent: true });
    const consent = async () =>
      (await api.prisma.user.findUniqueOrThrow({ where: { id: member.id } })).marketingConsentGiven;
    const path = `/api/v1/email/unsubscribe?t=${encodeURIComponent(tokens.sign(member.id))}`;

    const refused = await api.http.post(`${path}&x=%FF`).type('form').send('List-Unsubscribe=One-Click');
    expectProblem('a bad escape next to the token', refused, 400, 'validation_failed');
    expect(await consent()).toBe(true);

    // The one-click body is never decoded: an invalid escape in it does not refuse the unsubscribe.
    const clicked = await api.http.post(path).type('form').send('List-Unsubscribe=One-Click&x=%FF');
    expect({ status: clicked.status, body: clicked.body }).toEqual({
      status: 200,
      body: { unsubscribed: true },
    });
    expect(await consent()).toBe(false);
  });

  it('leaves the webhook receivers their query strings (they read neither the query nor a form)', async () => {
    const delivery = signIdentityEvent(
      identityUserEvent('user.created', 'user_text_query_hook', 'query-hook@example.com'),
    );
    const res = await api.http.post('/webhooks/identity?x=%FF').set(delivery.headers).send(delivery.body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ received: true, event_id: delivery.id });
  });

  it('leaves the webhook receivers their raw bytes whatever the charset (they verify the signature)', async () => {
    const delivery = signIdentityEvent(
      identityUserEvent('user.created', 'user_text_hook', 'hook@example.com'),
    );
    const res = await api.http
      .post('/webhooks/identity')
      .set({ ...delivery.headers, 'content-type': 'application/json; charset=latin1' })
      .send(delivery.body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ received: true, event_id: delivery.id });
  });

  it('verifies a signed webhook sent as text/plain or with no media type, instead of a signature mismatch', async () => {
    for (const [i, contentType] of ['text/plain', 'application/octet-stream', undefined].entries()) {
      const delivery = signIdentityEvent(
        identityUserEvent('user.created', `user_typed_hook_${i}`, `typed-hook-${i}@example.com`),
      );
      const req = api.http.post('/webhooks/identity').set(delivery.headers);
      if (contentType) req.set('content-type', contentType);
      else req.unset('content-type');
      const res = await req.send(Buffer.from(delivery.body));
      expect({ contentType, status: res.status, body: res.body }).toMatchObject({
        contentType,
        status: 200,
        body: { received: true, event_id: delivery.id },
      });
    }
  });
});
