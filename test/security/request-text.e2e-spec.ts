/**
 * The text of a JSON request body, on every authenticated and admin route: JSON is UTF-8 (RFC 8259), so a
 * body declared in another charset is 415, bytes that are not UTF-8 are 400, and a string or key holding
 * an unpaired UTF-16 surrogate (`"a\ud800"`, only writable as a JSON escape) is 400 naming the field. Each
 * refusal changes nothing. Before, the body was decoded as UTF-8 whatever its charset, invalid bytes and
 * unpaired surrogates in text columns were stored as U+FFFD, while JSON fields refused the surrogates.
 * The webhook receivers keep their raw bytes (signatures) and their own rules.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { signIdentityEvent, identityUserEvent } from '../support/identity-webhook.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const PROBLEM = /^application\/problem\+json/;

describe('JSON request text: UTF-8 only, no unpaired surrogates, nothing stored on a refusal', () => {
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
