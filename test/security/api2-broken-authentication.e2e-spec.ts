/**
 * OWASP API2:2023 Broken Authentication.
 *
 * Routes covered (derived from the application, checked against ROUTE_TABLE):
 * - every `user` and `admin` route (everything under /api/v1 except the unsubscribe link): no credential,
 *   other schemes, malformed, expired, not-yet-valid, wrong issuer, wrong audience, wrong authorized
 *   party, alg none, HS256 keyed with the public key, a key outside the JWKS, an unknown kid, a tampered
 *   payload, a token without subject, an unknown user without e-mail, the TESTING bypass while TESTING
 *   is off, tokens in the query string or a cookie, unknown / revoked / expired API keys: always 401
 *   problem+json with `WWW-Authenticate: Bearer`, and nothing written;
 * - the same routes with the credentials of a soft-deleted account: 403 `account_deleted` except on the
 *   `@AllowDeleted()` routes; with its API key, the `@RefuseApiKeys()` routes (account deletion, restore,
 *   export) answer 403 `api_key_not_allowed` instead, so a key cannot restore what the provider deleted;
 * - POST /webhooks/identity and POST /webhooks/billing: missing, malformed, wrong-secret, stale, future and
 *   body-altered signatures: 401 and nothing stored;
 * - GET/POST /api/v1/email/unsubscribe: missing, forged, truncated, wrong-purpose tokens: 400, no change;
 * - token hardening on every protected route (401, nothing written): no `exp`, no `iat`, an `iat` in the
 *   future, a token older than IDENTITY_MAX_TOKEN_AGE_SECONDS whatever its `exp`, an unknown `crit`
 *   header, `sub` that is not a short clean string (an object, CRLF, 10,000 characters), an `email` claim
 *   that is not an address (an object, CRLF header injection, a Unicode look-alike);
 * - the JWKS endpoint is not re-fetched for every unknown kid: one refresh per cooldown shared by all
 *   callers, so garbage kids cannot use up the refreshes a real user needs after a key rotation;
 * - a key-set outage answers 503 `identity_unavailable` (with Retry-After), never 401 or 500;
 * - POST /api/v1/account/me/restore with a valid token: 409 `deleted_by_identity_provider` once the
 *   identity provider deleted the user (`user.deleted`), also after the user had asked first; a deletion
 *   the user asked for alone stays restorable.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { generateApiKey } from '../../src/modules/auth/api-key.util.js';
import { paddleSignature } from '../../src/modules/billing/intake/paddle-signature.js';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { newSubId, subscriptionEvent } from '../support/billing.js';
import {
  deliverIdentity,
  identityDeletedEvent,
  identityUserEvent,
  signIdentityEvent,
} from '../support/identity-webhook.js';
import { IdentityKeySet } from '../../src/modules/auth/identity-key-set.js';
import { TEST_SECRETS } from '../support/test-env.js';
import { inBatches, tableCounts } from './support/db.js';
import { call, expectRouteTableMatches, type TableRoute } from './support/route-table.js';
import { SecurityWorld } from './support/world.js';

const AUDIENCE = 'https://api.example.test';
const PARTY = 'https://app.example.test';

describe('API2 broken authentication: only a valid credential of a live account gets in', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let protectedRoutes: TableRoute[];

  beforeAll(async () => {
    world = await SecurityWorld.start({
      env: { IDENTITY_AUDIENCE: AUDIENCE, IDENTITY_AUTHORIZED_PARTIES: PARTY },
      claims: { audience: AUDIENCE, azp: PARTY },
    });
    routes = expectRouteTableMatches(world.api.app);
    protectedRoutes = routes.filter((r) => r.access === 'user' || r.access === 'admin');
    // Shorter than the 5 s default so the unknown-kid variants below do not take minutes.
    world.api.app.get(IdentityKeySet).cooldownMs = 1000;
  });
  afterAll(() => world.close());

  const token = (
    sub: string,
    email: string | undefined,
    options: Parameters<SecurityWorld['env']['idp']['token']>[1] = {},
    azp = PARTY,
  ) => world.env.idp.token({ sub, email, azp }, { audience: AUDIENCE, ...options });

  /** Sample path parameters: a route must refuse the credential before it looks anything up. */
  const sampleParams = (route: TableRoute) => (route.params.length ? { id: randomUUID() } : {});

  it('lists every protected route', () => {
    expect(protectedRoutes.length).toBeGreaterThanOrEqual(36);
    expect(
      routes
        .filter((r) => !protectedRoutes.includes(r))
        .map((r) => r.access)
        .sort(),
    ).toEqual([
      'public',
      'public',
      'public',
      'unsubscribe',
      'unsubscribe',
      'unsubscribe',
      'unsubscribe',
      'webhook',
      'webhook',
      'webhook',
    ]);
  });

  it('accepts a valid token on every protected route (positive control)', async () => {
    const sub = `user_valid_${randomUUID().slice(0, 6)}`;
    const auth = `bearer ${await token(sub, `${sub}@example.com`)}`;
    const statuses = await inBatches(
      protectedRoutes.filter((r) => !r.last),
      6,
      async (route) => ({
        route: route.key,
        status: (await call(world.api, route, { auth, params: sampleParams(route), body: route.body }))
          .status,
      }),
    );
    for (const { route, status } of statuses) {
      expect({ route, unauthenticated: status === 401 }).toEqual({ route, unauthenticated: false });
      expect(status).toBeLessThan(500);
      if (ROUTE_IS_ADMIN(route)) expect({ route, status }).toEqual({ route, status: 403 });
    }
  });

  const ROUTE_IS_ADMIN = (key: string) => routes.find((r) => r.key === key)?.access === 'admin';

  type Variant = [
    string,
    { auth?: string; query?: Record<string, string>; headers?: Record<string, string> },
  ];
  /** Every bad credential, built once; the checks below run in parts so each stays well inside its budget. */
  let variants: Variant[] = [];
  const PARTS = 4;

  beforeAll(async () => {
    const { api, env } = world;
    const known = await world.user('known');
    const valid = await token(known.sub, undefined);
    const [header, , signature] = valid.split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({
        sub: known.sub,
        iss: env.idp.issuer,
        aud: AUDIENCE,
        azp: PARTY,
        exp: 9_999_999_999,
        email: 'admin@example.com',
      }),
    ).toString('base64url');
    const revoked = await world.apiKey(known.auth, 'revoked');
    expect(
      (await api.http.delete(`/api/v1/api_keys/${revoked.id}`).set('Authorization', known.auth)).status,
    ).toBe(204);
    const expired = await world.apiKey(known.auth, 'expired');
    await api.prisma.apiKey.update({
      where: { id: expired.id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const live = await world.apiKey(known.auth, 'live');
    const now = Math.floor(Date.now() / 1000);
    /** Validly signed with the published key: only the service's own claim checks can refuse these. */
    const raw = (payload: Record<string, unknown>, header: Record<string, unknown> = {}) =>
      env.idp.rawToken(header, {
        sub: known.sub,
        aud: AUDIENCE,
        azp: PARTY,
        iat: now,
        exp: now + 60,
        ...payload,
      });
    const ghost = () => `user_ghost_${randomUUID().slice(0, 8)}`;

    variants = [
      ['no credential', {}],
      ['basic scheme', { auth: 'Basic dXNlcjpwYXNz' }],
      ['empty bearer', { auth: 'Bearer ' }],
      ['bearer twice', { auth: `Bearer Bearer ${valid}` }],
      ['not a jwt', { auth: 'Bearer not-a-jwt' }],
      ['expired', { auth: `Bearer ${await token(known.sub, undefined, { expiresIn: -30 })}` }],
      ['not yet valid', { auth: `Bearer ${await token(known.sub, undefined, { notBefore: 120 })}` }],
      [
        'wrong issuer',
        { auth: `Bearer ${await token(known.sub, undefined, { issuer: 'https://evil.example.com' })}` },
      ],
      ['no audience', { auth: `Bearer ${await env.idp.token({ sub: known.sub, azp: PARTY })}` }],
      [
        'wrong audience',
        { auth: `Bearer ${await token(known.sub, undefined, { audience: 'https://other.example' })}` },
      ],
      [
        'wrong authorized party',
        { auth: `Bearer ${await token(known.sub, undefined, {}, 'https://evil.example')}` },
      ],
      ['alg none', { auth: `Bearer ${env.idp.unsignedToken({ sub: known.sub })}` }],
      ['hs256 with the public key', { auth: `Bearer ${env.idp.hs256WithPublicKey({ sub: known.sub })}` }],
      ['key outside the jwks', { auth: `Bearer ${await token(known.sub, undefined, { foreignKey: true })}` }],
      ['unknown kid', { auth: `Bearer ${await token(known.sub, undefined, { kid: 'kid_unknown' })}` }],
      ['tampered payload', { auth: `Bearer ${header}.${forgedPayload}.${signature}` }],
      ['stripped signature', { auth: `Bearer ${header}.${valid.split('.')[1]}.` }],
      ['no subject', { auth: `Bearer ${await token('', 'nobody@example.com')}` }],
      [
        'unknown user without e-mail',
        { auth: `Bearer ${await token(`user_ghost_${randomUUID()}`, undefined)}` },
      ],
      ['no exp', { auth: `Bearer ${await raw({ exp: undefined })}` }],
      ['no iat', { auth: `Bearer ${await raw({ iat: undefined })}` }],
      ['iat in the future', { auth: `Bearer ${await token(known.sub, undefined, { issuedAt: 300 })}` }],
      [
        'older than the maximum age, exp far ahead',
        { auth: `Bearer ${await raw({ iat: now - 86_400 - 60, exp: now + 86_400 })}` },
      ],
      [
        'unknown crit header',
        { auth: `Bearer ${await raw({}, { crit: ['urn:example:ext'], 'urn:example:ext': true })}` },
      ],
      [
        'sub is an object',
        { auth: `Bearer ${await raw({ sub: { a: 1 }, email: 'obj@example.com', email_verified: true })}` },
      ],
      [
        'sub with CRLF',
        {
          auth: `Bearer ${await raw({ sub: 'user_x\r\nX-Injected: 1', email: 'crlf@example.com', email_verified: true })}`,
        },
      ],
      // Stored as U+FFFD, two such subjects ('\ud800', '\udc00') would share one account.
      [
        'sub with an unpaired surrogate',
        {
          auth: `Bearer ${await raw({ sub: 'user_\ud800', email: 'surrogate@example.com', email_verified: true })}`,
        },
      ],
      // Invalid UTF-8 bytes in the payload decode to U+FFFD: 0xFF and 0xFE would name one account.
      [
        'sub with U+FFFD',
        {
          auth: `Bearer ${await raw({ sub: 'user_\ufffd', email: 'replacement@example.com', email_verified: true })}`,
        },
      ],
      [
        'sub of 10,000 characters',
        {
          auth: `Bearer ${await raw({ sub: 'u'.repeat(10_000), email: 'long@example.com', email_verified: true })}`,
        },
      ],
      [
        'email is an object',
        { auth: `Bearer ${await raw({ sub: ghost(), email: { a: 1 }, email_verified: true })}` },
      ],
      [
        'email with CRLF header injection',
        {
          auth: `Bearer ${await raw({ sub: ghost(), email: 'a@example.com\r\nBcc: victim@example.net', email_verified: true })}`,
        },
      ],
      [
        'email a Unicode look-alike',
        {
          auth: `Bearer ${await raw({ sub: ghost(), email: '\u212Aim@example.com', email_verified: true })}`,
        },
      ],
      [
        'email not an address',
        { auth: `Bearer ${await raw({ sub: ghost(), email: 'not-an-address', email_verified: true })}` },
      ],
      ['testing bypass while TESTING is off', { auth: `Bearer test:${known.sub}:admin@example.com` }],
      ['token in the query string', { query: { access_token: valid, token: valid } }],
      ['token in a cookie', { headers: { Cookie: `token=${valid}; session=${valid}` } }],
      ['unknown api key', { auth: `Bearer ${generateApiKey().key}` }],
      [
        'api key with a flipped character',
        { auth: `${live.auth.slice(0, -1)}${live.auth.endsWith('A') ? 'B' : 'A'}` },
      ],
      ['revoked api key', { auth: revoked.auth }],
      ['expired api key', { auth: expired.auth }],
    ];
  });

  it.each(Array.from({ length: PARTS }, (_, part) => part))(
    'answers 401 problem+json to every bad credential on every protected route and writes nothing (part %i)',
    async (part) => {
      const { api } = world;
      const mine = variants.filter((_, i) => i % PARTS === part);
      expect(mine.length).toBeGreaterThan(0);
      const before = await tableCounts(api.prisma);
      const failures: string[] = [];
      for (const [name, variant] of mine) {
        const results = await inBatches(protectedRoutes, 8, async (route) => ({
          route,
          res: await call(api, route, { ...variant, params: sampleParams(route), body: route.body }),
        }));
        for (const { route, res } of results) {
          const ok =
            res.status === 401 &&
            /^application\/problem\+json/.test(res.headers['content-type'] ?? '') &&
            res.headers['www-authenticate'] === 'Bearer' &&
            res.body.status === 401;
          if (!ok) failures.push(`${name}: ${route.key} -> ${res.status} ${res.text.slice(0, 120)}`);
        }
      }
      expect(failures).toEqual([]);
      expect(await tableCounts(api.prisma)).toEqual(before);
    },
  );

  it('refuses a soft-deleted account everywhere except the @AllowDeleted routes (JWT and API key, which @RefuseApiKeys routes refuse)', async () => {
    const { api } = world;
    const gone = await world.user('gone');
    const key = await world.apiKey(gone.auth, 'gone key');
    await api.prisma.user.update({ where: { id: gone.user.id }, data: { deletedAt: new Date() } });
    const jwt = `Bearer ${await token(gone.sub, undefined)}`;
    const restore = protectedRoutes.find((r) => r.key === 'post /api/v1/account/me/restore')!;
    const others = protectedRoutes.filter((r) => r !== restore);
    for (const auth of [jwt, key.auth]) {
      for (const route of others) {
        const res = await call(api, route, { auth, params: sampleParams(route), body: route.body });
        if (auth === key.auth && route.refusesApiKeys) {
          // Checked before the account state: the key is the wrong credential either way.
          expect({ route: route.key, status: res.status, code: res.body.code }).toEqual({
            route: route.key,
            status: 403,
            code: 'api_key_not_allowed',
          });
        } else if (route.allowDeleted) {
          expect({ route: route.key, status: res.status }).toEqual({ route: route.key, status: 200 });
        } else {
          expect({ route: route.key, status: res.status, code: res.body.code }).toEqual({
            route: route.key,
            status: 403,
            code: 'account_deleted',
          });
        }
      }
    }
    expect(restore.allowDeleted).toBe(true);
    // A leftover key cannot undo the deletion; an interactive sign-in can.
    expect((await call(api, restore, { auth: key.auth })).body.code).toBe('api_key_not_allowed');
    expect(
      (await api.prisma.user.findUniqueOrThrow({ where: { id: gone.user.id } })).deletedAt,
    ).not.toBeNull();
    expect((await call(api, restore, { auth: jwt })).status).toBe(200);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: gone.user.id } })).deletedAt).toBeNull();
  });

  it('refuses webhooks without a valid signature and stores nothing', async () => {
    const { api } = world;
    const identity = signIdentityEvent(
      identityUserEvent('user.created', 'user_wh_attacker', 'attacker@example.com'),
    );
    const sixMinutes = 6 * 60_000;
    const stale = signIdentityEvent(identityUserEvent('user.created', 'user_wh_stale', 'stale@example.com'), {
      timestamp: new Date(Date.now() - sixMinutes),
    });
    const future = signIdentityEvent(
      identityUserEvent('user.created', 'user_wh_future', 'future@example.com'),
      {
        timestamp: new Date(Date.now() + sixMinutes),
      },
    );
    const otherSecret = signIdentityEvent(
      identityUserEvent('user.created', 'user_wh_other', 'other@example.com'),
      {
        secret: `whsec_${randomBytes(32).toString('base64')}`,
      },
    );
    const identityCases: [string, Record<string, string>, string][] = [
      ['no headers', { 'content-type': 'application/json' }, identity.body],
      ['altered body', identity.headers, identity.body.replace('attacker@', 'admin@')],
      ['stale timestamp', stale.headers, stale.body],
      ['future timestamp', future.headers, future.body],
      ['other secret', otherSecret.headers, otherSecret.body],
      ['garbage signature', { ...identity.headers, 'webhook-signature': 'v1,AAAA' }, identity.body],
      ['oversized id', { ...identity.headers, 'webhook-id': 'x'.repeat(300) }, identity.body],
      [
        'svix headers, bad signature',
        {
          'content-type': 'application/json',
          'svix-id': identity.id,
          'svix-timestamp': identity.headers['webhook-timestamp'],
          'svix-signature': `v1,${createHmac('sha256', 'nope').update('x').digest('base64')}`,
        },
        identity.body,
      ],
    ];

    const raw = JSON.stringify(subscriptionEvent({ type: 'subscription.created', subId: newSubId() }));
    const ts = Math.floor(Date.now() / 1000);
    const good = paddleSignature(TEST_SECRETS.BILLING_WEBHOOK_SECRET, ts, raw);
    const billingCases: [string, string | undefined, string][] = [
      ['no header', undefined, raw],
      ['malformed header', 'garbage', raw],
      [
        'wrong secret',
        `ts=${ts};h1=${paddleSignature('another-secret-of-enough-length-0123456789', ts, raw)}`,
        raw,
      ],
      [
        'stale',
        `ts=${ts - 360};h1=${paddleSignature(TEST_SECRETS.BILLING_WEBHOOK_SECRET, ts - 360, raw)}`,
        raw,
      ],
      [
        'future',
        `ts=${ts + 360};h1=${paddleSignature(TEST_SECRETS.BILLING_WEBHOOK_SECRET, ts + 360, raw)}`,
        raw,
      ],
      ['altered body', `ts=${ts};h1=${good}`, raw.replace('"active"', '"canceled"')],
      ['h1 not hex', `ts=${ts};h1=${'z'.repeat(64)}`, raw],
      [
        'too many h1',
        `ts=${ts};${Array.from({ length: 9 }, () => `h1=${'0'.repeat(64)}`).join(';')};h1=${good}`,
        raw,
      ],
    ];

    const before = await tableCounts(api.prisma);
    const failures: string[] = [];
    const check = (name: string, res: Response) => {
      if (res.status !== 401 || res.body.code !== 'invalid_signature')
        failures.push(`${name} -> ${res.status} ${res.text.slice(0, 100)}`);
    };
    for (const [name, headers, body] of identityCases) {
      check(`identity ${name}`, await api.http.post('/webhooks/identity').set(headers).send(body));
    }
    for (const [name, signature, body] of billingCases) {
      let req = api.http.post('/webhooks/billing').set('Content-Type', 'application/json');
      if (signature) req = req.set('Paddle-Signature', signature);
      check(`billing ${name}`, await req.send(body));
    }
    expect(failures).toEqual([]);
    expect(await tableCounts(api.prisma)).toEqual(before);
  });

  it('refuses forged, truncated and wrong-purpose unsubscribe tokens and changes nothing', async () => {
    const { api } = world;
    const victim = await world.user('unsub-victim');
    await api.prisma.user.update({ where: { id: victim.user.id }, data: { marketingConsentGiven: true } });
    const real = api.app.get(UnsubscribeTokens).sign(victim.user.id);
    const [payload, mac] = real.split('.');
    const macWith = (secret: string, body: string) =>
      createHmac('sha256', secret).update(body).digest('base64url');
    const otherPurpose = Buffer.from(JSON.stringify({ u: victim.user.id, p: 'transactional' })).toString(
      'base64url',
    );
    const tokens: (string | undefined)[] = [
      undefined,
      '',
      'garbage',
      payload,
      `${payload}.`,
      `${payload}.${mac.slice(0, -2)}`,
      `${payload}.${mac}.extra`,
      `${payload}.${macWith('a-different-secret-that-is-long-enough-123', payload)}`,
      `${otherPurpose}.${macWith(TEST_SECRETS.EMAIL_UNSUBSCRIBE_SECRET, otherPurpose)}`,
      `${payload.toUpperCase()}.${mac}`,
    ];
    const before = await tableCounts(api.prisma);
    for (const t of tokens) {
      for (const method of ['get', 'post'] as const) {
        const res = await api.http[method]('/api/v1/email/unsubscribe').query(t === undefined ? {} : { t });
        expect({ t, method, status: res.status, code: res.body.code }).toEqual({
          t,
          method,
          status: 400,
          code: 'invalid_unsubscribe_token',
        });
      }
    }
    expect(await tableCounts(api.prisma)).toEqual(before);
    expect(
      (await api.prisma.user.findUniqueOrThrow({ where: { id: victim.user.id } })).marketingConsentGiven,
    ).toBe(true);
  });

  it('does not re-fetch the key set for every unknown kid', async () => {
    const sub = `user_kid_${randomUUID().slice(0, 6)}`;
    const before = world.env.idp.jwksRequests;
    const results = await inBatches(
      Array.from({ length: 30 }, (_, i) => i),
      10,
      async (i) =>
        (
          await world.api.http
            .get('/api/v1/me')
            .set('Authorization', `Bearer ${await token(sub, undefined, { kid: `kid_flood_${i}` })}`)
        ).status,
    );
    expect(new Set(results)).toEqual(new Set([401]));
    expect(world.env.idp.jwksRequests - before).toBeLessThanOrEqual(10);
  });
  it('lets a real user in right after a key rotation, however many garbage kids came first', async () => {
    const sub = `user_rotation_${randomUUID().slice(0, 6)}`;
    expect(
      (await world.api.http.get('/api/v1/me').set('Authorization', await world.bearer(sub))).status,
    ).toBe(200);
    const garbage = await inBatches(
      Array.from({ length: 60 }, (_, i) => i),
      20,
      async (i) =>
        (
          await world.api.http
            .get('/api/v1/me')
            .set('Authorization', `Bearer ${await token(sub, undefined, { kid: `kid_garbage_${i}` })}`)
        ).status,
    );
    expect(new Set(garbage)).toEqual(new Set([401]));
    // The provider rotates without announcing the new key first: the next token carries an unknown kid.
    await world.env.idp.rotate();
    const res = await world.api.http.get('/api/v1/me').set('Authorization', await world.bearer(sub));
    expect({ status: res.status, code: res.body.code }).toEqual({ status: 200, code: undefined });
  });

  it('answers 503 identity_unavailable while the key set is down, and recovers', async () => {
    const { api, env } = world;
    const sub = `user_outage_${randomUUID().slice(0, 6)}`;
    expect((await api.http.get('/api/v1/me').set('Authorization', await world.bearer(sub))).status).toBe(200);
    env.idp.available = false;
    try {
      await env.idp.rotate();
      const res = await api.http.get('/api/v1/me').set('Authorization', await world.bearer(sub));
      expect({ status: res.status, code: res.body.code }).toEqual({
        status: 503,
        code: 'identity_unavailable',
      });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      env.idp.available = true;
    }
    const res = await api.http.get('/api/v1/me').set('Authorization', await world.bearer(sub));
    expect(res.status).toBe(200);
  });
  it('never restores an account the identity provider deleted, even with a token issued before', async () => {
    // The provider's user.deleted is applied by a worker, started for this test only (others count rows).
    const worker = await world.env.startWorker();
    try {
      await restoreRefusals();
    } finally {
      await world.env.stop(worker);
    }
  });

  async function restoreRefusals() {
    const { api } = world;
    const restore = (auth: string) => api.http.post('/api/v1/account/me/restore').set('Authorization', auth);
    const providerDeletes = async (sub: string) => {
      const delivery = signIdentityEvent(identityDeletedEvent(sub));
      // Applied by the worker: wait for its outcome (skipped when the user had asked for deletion first).
      expect(['processed', 'skipped']).toContain((await deliverIdentity(api, delivery)).outcome);
    };
    const state = (sub: string) => api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } });

    const gone = await world.user('idp-deleted');
    await providerDeletes(gone.sub);
    // Minted before the provider's deletion reached us; still valid for a while.
    const res = await restore(`Bearer ${await token(gone.sub, undefined)}`);
    expect({ status: res.status, code: res.body.code }).toEqual({
      status: 409,
      code: 'deleted_by_identity_provider',
    });
    expect((await state(gone.sub)).deletedAt).not.toBeNull();

    // The user asked first, then the provider deleted the identity: no longer the user's to undo.
    const both = await world.user('both-deleted');
    expect((await api.http.delete('/api/v1/account/me').set('Authorization', both.auth)).status).toBe(202);
    await providerDeletes(both.sub);
    expect((await restore(`Bearer ${await token(both.sub, undefined)}`)).status).toBe(409);
    expect((await state(both.sub)).deletedAt).not.toBeNull();
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'user.restored', userId: { in: [gone.sub, both.sub] } },
      }),
    ).toBe(0);

    // Positive control: a deletion the user asked for alone is restorable within the grace period.
    const self = await world.user('self-deleted');
    expect((await api.http.delete('/api/v1/account/me').set('Authorization', self.auth)).status).toBe(202);
    expect((await restore(`Bearer ${await token(self.sub, undefined)}`)).status).toBe(200);
    expect((await state(self.sub)).deletedAt).toBeNull();
  }
});
