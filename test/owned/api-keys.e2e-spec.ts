import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ProbeModule } from '../support/probe.module.js';
import { ISO_FORMS_DATE_CANNOT_READ } from '../support/instants.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import {
  expectProblem,
  ISO_TIMESTAMP,
  MISSING_UUID,
  notFoundBody,
  userOnTier,
  UUID,
} from './owned-helpers.js';

const BASE = '/api/v1/api_keys';
const KEY_FORMAT = /^(sk_live_[0-9a-f]{12})_[A-Za-z0-9_-]{43}$/;

describe('API keys: CRUD through /api/v1/api_keys and authentication with the keys it issues', () => {
  let env: TestEnv;
  let api: ApiApp;
  let alice: string;

  beforeAll(async () => {
    // Admin e-mail so that the admin-route refusal is about the key, not the person.
    env = await TestEnv.create({ env: { ADMIN_EMAILS: 'alice@example.com' } });
    api = await env.startApi({ modules: [ProbeModule] });
    alice = await userOnTier(api, 'user_key_alice', 'TEAM', 'alice@example.com');
  });
  afterAll(() => env.close());

  const create = (body: object, authorization = alice) =>
    api.http.post(BASE).set('Authorization', authorization).send(body);
  const asKey = (secret: string) => `Bearer ${secret}`;

  describe('create', () => {
    it('returns the secret once: sk_live_ + short id + 32 random bytes; only its hash is stored', async () => {
      const res = await create({ name: 'CI' });
      expect(res.status).toBe(201);
      expect(res.headers['cache-control']).toBe('no-store');
      const owner = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_key_alice' } });
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        user_id: owner.id,
        name: 'CI',
        prefix: expect.stringMatching(/^sk_live_[0-9a-f]{12}$/),
        created_at: expect.stringMatching(ISO_TIMESTAMP),
        updated_at: expect.stringMatching(ISO_TIMESTAMP),
        last_used_at: null,
        expires_at: null,
        revoked_at: null,
        secret: expect.stringMatching(KEY_FORMAT),
      });
      const secret: string = res.body.secret;
      expect(KEY_FORMAT.exec(secret)![1]).toBe(res.body.prefix);
      expect(Buffer.from(secret.split('_').slice(3).join('_'), 'base64url')).toHaveLength(32);

      const row = await api.prisma.apiKey.findUniqueOrThrow({ where: { id: res.body.id } });
      expect(row.secretHash).toBe(createHash('sha256').update(secret).digest('hex'));
      expect(JSON.stringify(row)).not.toContain(secret);

      const shown = await api.http.get(`${BASE}/${res.body.id}`).set('Authorization', alice);
      expect(shown.status).toBe(200);
      const { secret: _secret, ...listed } = res.body;
      expect(shown.body).toEqual(listed);
      const list = await api.http.get(BASE).set('Authorization', alice);
      expect(JSON.stringify(list.body)).not.toContain(secret);
      expect(JSON.stringify(list.body)).toContain(res.body.prefix);
    });

    it('keeps an expiry in the future and refuses one in the past or malformed', async () => {
      const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
      const res = await create({ name: 'tomorrow', expires_at: expiresAt });
      expect(res.status).toBe(201);
      expect(res.body.expires_at).toBe(expiresAt);
      // The create answers from the row its statement returned: the same as a later read.
      const { secret: _secret, ...stored } = res.body;
      expect((await api.http.get(`${BASE}/${res.body.id}`).set('Authorization', alice)).body).toEqual(stored);
      for (const expires_at of [
        new Date(Date.now() - 1000).toISOString(),
        'next week',
        '2030-13-01T00:00:00Z',
        ...ISO_FORMS_DATE_CANNOT_READ,
        5,
      ]) {
        const refused = await create({ name: 'bad', expires_at });
        expectProblem(refused, 400, 'validation_failed');
        expect(refused.body.errors).toEqual([expect.objectContaining({ field: 'expires_at' })]);
      }
    });

    it.each([
      ['an empty name', { name: '' }, 'name'],
      ['a name over 200 characters', { name: 'k'.repeat(201) }, 'name'],
      ['a client-supplied prefix', { name: 'k', prefix: 'sk_live_000000000000' }, 'prefix'],
      ['a client-supplied secret_hash', { name: 'k', secret_hash: 'aa' }, 'secret_hash'],
      ['a client-supplied user_id', { name: 'k', user_id: MISSING_UUID }, 'user_id'],
      ['a client-supplied revoked_at', { name: 'k', revoked_at: null }, 'revoked_at'],
    ])('refuses %s with a 400 problem', async (_case, body, field) => {
      const res = await create(body);
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    });

    it('audits api_key.created with prefix and expiry, never the secret', async () => {
      const res = await create({ name: 'audited' });
      const entries = await api.prisma.auditLog.findMany({ where: { resourceId: res.body.id } });
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        action: 'api_key.created',
        actor: 'user:user_key_alice',
        userId: 'user_key_alice',
        resourceType: 'api_key',
        details: { prefix: res.body.prefix, expires_at: null, via: 'jwt' },
      });
      expect(JSON.stringify(await api.prisma.auditLog.findMany())).not.toContain(res.body.secret);
    });
  });

  describe('authentication with an issued key', () => {
    it("is accepted as its owner's Bearer credential on /api/v1 routes", async () => {
      const key = await create({ name: 'reader' });
      const search = await api.http
        .post('/api/v1/saved_searches')
        .set('Authorization', alice)
        .send({ name: 'via jwt', query: 'q' });
      const res = await api.http.get('/api/v1/saved_searches').set('Authorization', asKey(key.body.secret));
      expect(res.status).toBe(200);
      expect(res.body.items.map((item: { id: string }) => item.id)).toContain(search.body.id);
      const whoami = await api.http.get('/api/v1/probe/whoami').set('Authorization', asKey(key.body.secret));
      expect(whoami.body).toMatchObject({ identity_user_id: 'user_key_alice', via: 'api_key' });
    });

    it('records last_used_at, at most once a minute', async () => {
      const key = await create({ name: 'touch' });
      await api.http.get('/api/v1/saved_searches').set('Authorization', asKey(key.body.secret));
      const first = await waitFor(
        async () => (await api.prisma.apiKey.findUniqueOrThrow({ where: { id: key.body.id } })).lastUsedAt,
      );
      await api.http.get('/api/v1/saved_searches').set('Authorization', asKey(key.body.secret));
      const shown = await api.http.get(`${BASE}/${key.body.id}`).set('Authorization', alice);
      expect(shown.body.last_used_at).toBe(first.toISOString());

      // A minute later (moved back in the database instead of waiting) the next use records again.
      const earlier = new Date(Date.now() - 61_000);
      await api.prisma.apiKey.update({ where: { id: key.body.id }, data: { lastUsedAt: earlier } });
      await api.http.get('/api/v1/saved_searches').set('Authorization', asKey(key.body.secret));
      const again = await api.prisma.apiKey.findUniqueOrThrow({ where: { id: key.body.id } });
      expect(again.lastUsedAt!.getTime()).toBeGreaterThan(earlier.getTime());
    });

    it('is refused with 401 after DELETE revoked it; the key stays listed as revoked', async () => {
      const key = await create({ name: 'to revoke' });
      const bearer = asKey(key.body.secret);
      expect((await api.http.get('/api/v1/saved_searches').set('Authorization', bearer)).status).toBe(200);

      const revoked = await api.http.delete(`${BASE}/${key.body.id}`).set('Authorization', alice);
      expect(revoked.status).toBe(204);
      expectProblem(
        await api.http.get('/api/v1/saved_searches').set('Authorization', bearer),
        401,
        'invalid_api_key',
      );

      const shown = await api.http.get(`${BASE}/${key.body.id}`).set('Authorization', alice);
      expect(shown.body.revoked_at).toMatch(ISO_TIMESTAMP);
      const list = await api.http.get(`${BASE}?page_size=200`).set('Authorization', alice);
      expect(list.body.items).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ id: key.body.id, revoked_at: shown.body.revoked_at }),
        ]),
      );

      // Revoking again is a no-op: 204, revoked_at unchanged, one audit entry.
      expect((await api.http.delete(`${BASE}/${key.body.id}`).set('Authorization', alice)).status).toBe(204);
      const after = await api.http.get(`${BASE}/${key.body.id}`).set('Authorization', alice);
      expect(after.body.revoked_at).toBe(shown.body.revoked_at);
      const entries = await api.prisma.auditLog.findMany({ where: { resourceId: key.body.id } });
      expect(entries.map((entry) => [entry.action, entry.details])).toEqual([
        ['api_key.created', expect.anything()],
        ['api_key.revoked', { prefix: key.body.prefix, via: 'jwt' }],
      ]);
    });

    it('is refused with 401 once expired', async () => {
      const key = await create({ name: 'short', expires_at: new Date(Date.now() + 60_000).toISOString() });
      const bearer = asKey(key.body.secret);
      expect((await api.http.get('/api/v1/saved_searches').set('Authorization', bearer)).status).toBe(200);
      // Expire it in the database rather than sleeping through the minute.
      await api.prisma.apiKey.update({
        where: { id: key.body.id },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      expectProblem(
        await api.http.get('/api/v1/saved_searches').set('Authorization', bearer),
        401,
        'invalid_api_key',
      );
    });

    it('is refused with 401 when the secret is wrong, even with a valid prefix', async () => {
      const key = await create({ name: 'guess me' });
      const secret: string = key.body.secret;
      const tampered = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
      for (const bearer of [tampered, `${key.body.prefix}_${'A'.repeat(43)}`, key.body.prefix, 'sk_live_']) {
        expectProblem(
          await api.http.get('/api/v1/saved_searches').set('Authorization', asKey(bearer)),
          401,
          'invalid_api_key',
        );
      }
    });

    it('is refused on admin routes even when its owner is an admin (403)', async () => {
      expect((await api.http.get('/api/v1/probe/admin').set('Authorization', alice)).status).toBe(200);
      const key = await create({ name: 'admin person' });
      const res = await api.http.get('/api/v1/probe/admin').set('Authorization', asKey(key.body.secret));
      expectProblem(res, 403, 'api_key_not_allowed');
      const refusal = await api.prisma.auditLog.findFirst({
        where: { action: 'admin.unauthorized', userId: 'user_key_alice' },
      });
      expect(refusal?.details).toMatchObject({ via: 'api_key' });
    });

    it('cannot create or revoke API keys (403 api_key_not_allowed), but can list them', async () => {
      const key = await create({ name: 'automation' });
      const bearer = asKey(key.body.secret);
      const before = await api.prisma.apiKey.count();
      expectProblem(await create({ name: 'minted by a key' }, bearer), 403, 'api_key_not_allowed');
      expect(await api.prisma.apiKey.count()).toBe(before);

      const other = await create({ name: 'other' });
      expectProblem(
        await api.http.delete(`${BASE}/${other.body.id}`).set('Authorization', bearer),
        403,
        'api_key_not_allowed',
      );
      expectProblem(
        await api.http.delete(`${BASE}/${key.body.id}`).set('Authorization', bearer),
        403,
        'api_key_not_allowed',
      );
      const stored = await api.prisma.apiKey.findMany({
        where: { id: { in: [key.body.id, other.body.id] } },
      });
      expect(stored.every((row) => row.revokedAt === null)).toBe(true);
      expect((await api.http.get(BASE).set('Authorization', bearer)).status).toBe(200);
    });
  });

  it('answers 404 with the same body for missing, malformed and foreign ids; no PATCH route', async () => {
    const bob = await api.bearer('user_key_bob');
    const bobsKey = await create({ name: 'bob' }, bob);
    const missing = notFoundBody(await api.http.get(`${BASE}/${MISSING_UUID}`).set('Authorization', alice));
    expect(
      notFoundBody(await api.http.get(`${BASE}/${bobsKey.body.id}`).set('Authorization', alice)),
    ).toEqual(missing);
    expect(
      notFoundBody(await api.http.delete(`${BASE}/${bobsKey.body.id}`).set('Authorization', alice)),
    ).toEqual(missing);
    expect(notFoundBody(await api.http.delete(`${BASE}/not-a-uuid`).set('Authorization', alice))).toEqual(
      missing,
    );
    expect(
      (await api.prisma.apiKey.findUniqueOrThrow({ where: { id: bobsKey.body.id } })).revokedAt,
    ).toBeNull();
    expect(
      (await api.http.get('/api/v1/saved_searches').set('Authorization', asKey(bobsKey.body.secret))).status,
    ).toBe(200);
    expect(
      (await api.http.patch(`${BASE}/${bobsKey.body.id}`).set('Authorization', bob).send({ name: 'x' }))
        .status,
    ).toBe(404);
  });

  it('counts only active keys against the tier limit (409 limit_reached)', async () => {
    const authorization = await api.bearer('user_key_quota');
    const limit = api.config.project.tiers.FREE.limits.apiKeys;
    const keys = [];
    for (let i = 0; i < limit; i += 1) keys.push(await create({ name: `k${i}` }, authorization));
    expectProblem(await create({ name: 'over' }, authorization), 409, 'limit_reached');
    await api.http.delete(`${BASE}/${keys[0].body.id}`).set('Authorization', authorization);
    expect((await create({ name: 'after revoke' }, authorization)).status).toBe(201);
    await api.prisma.apiKey.update({
      where: { id: keys[1].body.id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await create({ name: 'after expiry' }, authorization)).status).toBe(201);
    expectProblem(await create({ name: 'over again' }, authorization), 409, 'limit_reached');
  });

  it('never writes a secret to the logs', async () => {
    const res = await create({ name: 'log check' });
    await api.http.get('/api/v1/saved_searches').set('Authorization', asKey(res.body.secret));
    expect(env.logs.lines.some((line) => line.includes(res.body.secret))).toBe(false);
  });
});
