import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { generateApiKey } from '../../src/modules/auth/api-key.util.js';
import { ProbeModule } from '../support/probe.module.js';
import { captureSql } from '../support/sql-capture.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('authentication (real RS256 tokens against a local JWKS)', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi({ modules: [ProbeModule] });
  });
  afterAll(() => env.close());

  const whoami = (authorization?: string) => {
    const req = api.http.get('/api/v1/probe/whoami');
    return authorization ? req.set('Authorization', authorization) : req;
  };

  const expectUnauthenticated = async (authorization: string | undefined, code: string) => {
    const res = await whoami(authorization);
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 401, code });
    expect(res.headers['www-authenticate']).toBe('Bearer');
  };

  it('accepts a valid token and creates the user just in time when the webhook is late', async () => {
    const res = await whoami(`Bearer ${await env.idp.token({ sub: 'user_jit', email: 'jit@example.com' })}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ identity_user_id: 'user_jit', via: 'jwt' });
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_jit' } });
    expect(user.email).toBe('jit@example.com');
    const audit = await api.prisma.auditLog.findMany({
      where: { action: 'user.created', userId: 'user_jit' },
    });
    expect(audit).toHaveLength(1);
    expect(audit[0].details).toEqual({ created_via: 'token' });
    const outbox = await api.prisma.outboxEntry.findMany({ where: { jobName: 'post-signup' } });
    expect(outbox.map((o) => o.payload)).toContainEqual({ userId: user.id });
  });

  it('creates one row when many first requests of a new user race', async () => {
    const token = await env.idp.token({ sub: 'user_race', email: 'race@example.com' });
    const results = await Promise.all(Array.from({ length: 8 }, () => whoami(`Bearer ${token}`)));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(await api.prisma.user.count({ where: { identityUserId: 'user_race' } })).toBe(1);
    expect(await api.prisma.auditLog.count({ where: { action: 'user.created', userId: 'user_race' } })).toBe(
      1,
    );
  });

  it('refuses a valid token of an unknown user without an e-mail claim', async () => {
    await expectUnauthenticated(`Bearer ${await env.idp.token({ sub: 'user_noemail' })}`, 'unknown_user');
    expect(await api.prisma.user.count({ where: { identityUserId: 'user_noemail' } })).toBe(0);
  });

  it('answers 401 problem+json without a token or with a malformed header', async () => {
    await expectUnauthenticated(undefined, 'unauthenticated');
    await expectUnauthenticated('Basic dXNlcjpwYXNz', 'unauthenticated');
    await expectUnauthenticated('Bearer not-a-jwt', 'invalid_token');
  });

  it('refuses a token expired beyond the 5 s leeway and accepts one within it', async () => {
    // 7 s and 3 s: two seconds from the edge on either side, so a slow request cannot flip the result,
    // while a leeway of 0 s or of 10 s fails one of the two.
    await expectUnauthenticated(
      `Bearer ${await env.idp.token({ sub: 'user_jit', email: 'jit@example.com' }, { expiresIn: -7 })}`,
      'token_expired',
    );
    const withinLeeway = await env.idp.token(
      { sub: 'user_jit', email: 'jit@example.com' },
      { expiresIn: -3 },
    );
    expect((await whoami(`Bearer ${withinLeeway}`)).status).toBe(200);
  });

  it('refuses a token not yet valid', async () => {
    const token = await env.idp.token({ sub: 'user_jit' }, { notBefore: 120 });
    await expectUnauthenticated(`Bearer ${token}`, 'invalid_token');
  });

  it('refuses a wrong issuer', async () => {
    const token = await env.idp.token({ sub: 'user_jit' }, { issuer: 'https://evil.example.com' });
    await expectUnauthenticated(`Bearer ${token}`, 'invalid_token');
  });

  it('refuses alg none', async () => {
    await expectUnauthenticated(
      `Bearer ${env.idp.unsignedToken({ sub: 'user_jit', email: 'jit@example.com' })}`,
      'invalid_token',
    );
  });

  it('refuses HS256 signed with the public key (algorithm confusion)', async () => {
    await expectUnauthenticated(
      `Bearer ${env.idp.hs256WithPublicKey({ sub: 'user_jit', email: 'jit@example.com' })}`,
      'invalid_token',
    );
  });

  // The alg-none and HS256 tokens above are already refused by jwks-rsa (it hands out no key for them);
  // these are validly signed with the published RSA key and kid, so only `algorithms: ['RS256']` stops them.
  it.each(['RS512', 'PS256'] as const)('refuses %s signed with the current key and kid', async (alg) => {
    const token = await env.idp.token({ sub: 'user_jit', email: 'jit@example.com' }, { alg });
    await expectUnauthenticated(`Bearer ${token}`, 'invalid_token');
    // The same claims, key and kid as RS256 pass: the algorithm alone decides.
    const rs256 = await env.idp.token({ sub: 'user_jit', email: 'jit@example.com' }, { alg: 'RS256' });
    expect((await whoami(`Bearer ${rs256}`)).status).toBe(200);
  });

  // A payload of JSON `null` made jsonwebtoken throw (`payload.nbf`) inside the key provider's promise:
  // the request never got an answer and the process died of the unhandled rejection.
  it.each(['null', '5', '"x"', 'true', '[]', '[{"sub":"user_jit"}]', 'nul', ''])(
    'refuses a validly signed token whose payload is %s (not a claims object) with 401 invalid_token',
    async (payload) => {
      const jwksRequests = env.idp.jwksRequests;
      for (const header of [{}, { typ: undefined }]) {
        const token = await env.idp.tokenWithPayload(payload, header);
        await expectUnauthenticated(`Bearer ${token}`, 'invalid_token');
      }
      // Refused before any key lookup, and the service keeps answering.
      expect(env.idp.jwksRequests).toBe(jwksRequests);
      expect((await whoami(await api.bearer('user_jit', 'jit@example.com'))).status).toBe(200);
    },
  );

  it('refuses a token signed by a key that is not in the JWKS', async () => {
    const token = await env.idp.token({ sub: 'user_jit' }, { foreignKey: true });
    await expectUnauthenticated(`Bearer ${token}`, 'invalid_token');
  });

  it('re-fetches the JWKS for an unknown kid after key rotation', async () => {
    expect((await whoami(await api.bearer('user_jit', 'jit@example.com'))).status).toBe(200);
    const before = env.idp.jwksRequests;
    await env.idp.rotate();
    const res = await whoami(await api.bearer('user_jit', 'jit@example.com'));
    expect(res.status).toBe(200);
    expect(env.idp.jwksRequests).toBe(before + 1);
    // Cached afterwards: no fetch per request.
    await whoami(await api.bearer('user_jit', 'jit@example.com'));
    expect(env.idp.jwksRequests).toBe(before + 1);
  });

  it('refuses soft-deleted users with 403 account_deleted except on allowed routes', async () => {
    const authorization = await api.bearer('user_gone', 'gone@example.com');
    expect((await whoami(authorization)).status).toBe(200);
    await api.prisma.user.update({ where: { identityUserId: 'user_gone' }, data: { deletedAt: new Date() } });
    const res = await whoami(authorization);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'account_deleted' });
    const allowed = await api.http.get('/api/v1/probe/deleted-ok').set('Authorization', authorization);
    expect(allowed.status).toBe(200);
    expect(allowed.body).toEqual({ deleted: true });
  });

  it('refuses the TESTING bypass token when TESTING is not 1', async () => {
    await expectUnauthenticated('Bearer test:user_bypass:bypass@example.com', 'invalid_token');
  });

  it('marks activity at most once an hour: no UPDATE within the hour, one again after it', async () => {
    const authorization = await api.bearer('user_active', 'active@example.com');
    const lastActive = async () =>
      (await api.prisma.user.findUnique({ where: { identityUserId: 'user_active' } }))?.lastActiveAt;
    const sql = captureSql(api.prisma.pool);
    const touches = () => sql.matching(/^\s*UPDATE users SET last_active_at/);
    try {
      await whoami(authorization);
      // The touch is fire-and-forget: poll for it.
      const first = await waitFor(lastActive);
      expect(touches()).toHaveLength(1);

      // Within the hour the guard sends nothing (the UPDATE's own WHERE would also leave the row alone,
      // so the row alone cannot tell whether the guard skipped the write).
      await whoami(authorization);
      expect(touches()).toHaveLength(1);
      expect((await lastActive())?.getTime()).toBe(first.getTime());

      // After the hour it is marked again.
      const hourAgo = new Date(Date.now() - 61 * 60_000);
      await api.prisma.user.update({
        where: { identityUserId: 'user_active' },
        data: { lastActiveAt: hourAgo },
      });
      await whoami(authorization);
      const again = await waitFor(async () => {
        const at = await lastActive();
        return at && at.getTime() > hourAgo.getTime() ? at : null;
      });
      expect(again.getTime()).toBeGreaterThanOrEqual(first.getTime());
      // One UPDATE for the first request and one for the third: none came late from the second.
      expect(touches()).toHaveLength(2);
    } finally {
      sql.restore();
    }
  });

  describe('API keys', () => {
    const makeKey = async (sub: string, data: { revokedAt?: Date; expiresAt?: Date } = {}) => {
      const user = await api.prisma.user.upsert({
        where: { identityUserId: sub },
        create: { identityUserId: sub, email: `${sub}@example.com` },
        update: {},
      });
      const generated = generateApiKey();
      await api.prisma.apiKey.create({
        data: {
          userId: user.id,
          name: 'k',
          prefix: generated.prefix,
          secretHash: generated.secretHash,
          ...data,
        },
      });
      return { key: generated.key, user };
    };

    it('accepts a valid key as its owner and records last use', async () => {
      const { key, user } = await makeKey('user_key');
      const res = await whoami(`Bearer ${key}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: user.id, via: 'api_key' });
      const stored = await api.prisma.apiKey.findFirstOrThrow({ where: { userId: user.id } });
      expect(stored.lastUsedAt).not.toBeNull();
    });

    it('refuses revoked, expired and wrong-secret keys', async () => {
      const revoked = await makeKey('user_key_revoked', { revokedAt: new Date() });
      await expectUnauthenticated(`Bearer ${revoked.key}`, 'invalid_api_key');
      const expired = await makeKey('user_key_expired', { expiresAt: new Date(Date.now() - 1000) });
      await expectUnauthenticated(`Bearer ${expired.key}`, 'invalid_api_key');
      const valid = await makeKey('user_key_tampered');
      await expectUnauthenticated(`Bearer ${valid.key.slice(0, -2)}xx`, 'invalid_api_key');
    });
  });
});

describe('admin allowlist', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { ADMIN_EMAILS: 'Admin@Example.com, boss@example.com' } });
    api = await env.startApi({ modules: [ProbeModule] });
  });
  afterAll(() => env.close());

  it('lets an allowlisted e-mail through (case-insensitive)', async () => {
    const res = await api.http
      .get('/api/v1/probe/admin')
      .set('Authorization', await api.bearer('user_admin', 'admin@example.com'));
    expect(res.status).toBe(200);
  });

  it('refuses others with 403 and writes admin.unauthorized', async () => {
    const res = await api.http
      .get('/api/v1/probe/admin')
      .set('Authorization', await api.bearer('user_plain', 'plain@example.com'));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'admin_required', status: 403 });
    const entries = await api.prisma.auditLog.findMany({ where: { action: 'admin.unauthorized' } });
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actor: 'user:user_plain', userId: 'user_plain' });
    expect(entries[0].details).toMatchObject({ method: 'GET', via: 'jwt' });
  });

  it('refuses an API key even when its owner is an admin', async () => {
    const admin = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_admin' } });
    const { generateApiKey: gen } = await import('../../src/modules/auth/api-key.util.js');
    const generated = gen();
    await api.prisma.apiKey.create({
      data: {
        userId: admin.id,
        name: 'admin key',
        prefix: generated.prefix,
        secretHash: generated.secretHash,
      },
    });
    const res = await api.http.get('/api/v1/probe/admin').set('Authorization', `Bearer ${generated.key}`);
    expect(res.status).toBe(403);
  });

  it('reads the allowlist from configuration on every request, not from the database', async () => {
    const other = await env.startApi({
      modules: [ProbeModule],
      config: env.configWith({ ADMIN_EMAILS: '' }),
    });
    const res = await other.http
      .get('/api/v1/probe/admin')
      .set('Authorization', await other.bearer('user_admin', 'admin@example.com'));
    expect(res.status).toBe(403);
  });
});

describe('TESTING=1 bypass', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { TESTING: '1' } });
    api = await env.startApi({ modules: [ProbeModule] });
  });
  afterAll(() => env.close());

  it('accepts test:<sub>:<email> tokens in the dependency layer', async () => {
    const res = await api.http
      .get('/api/v1/probe/whoami')
      .set('Authorization', 'Bearer test:user_t:t@example.com');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ identity_user_id: 'user_t', via: 'testing' });
  });

  it('still verifies real tokens', async () => {
    const res = await api.http
      .get('/api/v1/probe/whoami')
      .set('Authorization', `Bearer ${env.idp.unsignedToken({ sub: 'x' })}`);
    expect(res.status).toBe(401);
  });
});
