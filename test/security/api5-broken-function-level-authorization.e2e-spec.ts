import { createUser } from '../factories/user.factory.js';
/**
 * OWASP API5:2023 Broken Function Level Authorization.
 *
 * Routes covered (derived from the application, checked against ROUTE_TABLE):
 * - every admin route (every route carrying AdminGuard; they must be exactly the routes under
 *   /api/v1/admin): GET /admin/users, /admin/audit, /admin/broadcasts, /admin/broadcasts/:id,
 *   /admin/metrics/overview, /admin/stats and POST /admin/broadcasts, with a non-admin JWT (also one
 *   sending spoofed role headers), with an API key of a non-admin and with an API key of an admin: 403
 *   `admin_required`, one `admin.unauthorized` audit entry per attempt, nothing else written; with the
 *   admin's JWT: allowed; with a soft-deleted admin: 403 `account_deleted`;
 * - other verbs on admin paths and on every route (X-HTTP-Method-Override included) are not routed;
 * - API key management (POST /api/v1/api_keys, DELETE /api/v1/api_keys/:id) refuses API keys (403
 *   `api_key_not_allowed`), so a leaked key cannot mint successors or revoke its siblings;
 * - the account lifecycle and the full export (DELETE /api/v1/account/me, POST /api/v1/account/me/restore,
 *   GET /api/v1/account/me/export) refuse API keys the same way, so a leaked key can neither erase the
 *   account, nor undo a deletion the identity provider made, nor download everything;
 * - billing changes (POST /api/v1/billing/checkout, /checkout-token, /subscription/cancel, /change,
 *   /resume) and a consent change in PATCH /api/v1/me refuse API keys too (403 `api_key_not_allowed`, the
 *   provider is not called, consent unchanged), so a leaked key cannot end or buy a subscription;
 * - admin rights come only from a verified identity: an unverified e-mail claim (any case), a Unicode
 *   look-alike of an allowlisted address, an identity webhook that moves an unverified address onto a user,
 *   and a second identity holding the same address all get 403 `admin_required`; a token's e-mail claim
 *   never replaces the stored address; every first grant is audited `admin.granted`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { subscribe } from '../support/billing.js';
import { tableCounts } from './support/db.js';
import { call, expectRouteTableMatches, type TableRoute } from './support/route-table.js';
import { ADMIN_EMAIL, archivedEvent, SecurityWorld } from './support/world.js';

/** More allowlisted addresses, one per test that needs an identity of its own to hold one. */
const UPPER_ADMIN = 'second-admin@example.com';
const LEAVING_ADMIN = 'leaving-admin@example.com';
const BOSS = 'boss@example.com';
const KIM = 'kim@example.com';
const VERIFY_LATER = 'later-admin@example.com';
const EXTRA_ADMINS = [UPPER_ADMIN, LEAVING_ADMIN, BOSS, KIM, VERIFY_LATER];

describe('API5 broken function level authorization', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let adminRoutes: TableRoute[];
  let broadcastId: string;

  beforeAll(async () => {
    world = await SecurityWorld.start({
      env: { ADMIN_EMAILS: [ADMIN_EMAIL, ...EXTRA_ADMINS].join(',') },
    });
    routes = expectRouteTableMatches(world.api.app);
    adminRoutes = routes.filter((r) => r.adminOnly);
    const res = await world.api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', await world.admin())
      .send({ template_key: 'welcome', audience: { tiers: ['TEAM'] } });
    expect(res.status).toBe(201);
    broadcastId = res.body.id;
    webhookEventId = (await archivedEvent(world.api)).id;
  });
  afterAll(() => world.close());

  let webhookEventId: string;
  const params = (route: TableRoute) =>
    route.idOf === 'broadcast'
      ? { id: broadcastId }
      : route.idOf === 'webhook_event'
        ? { id: webhookEventId }
        : {};
  /** What an admin gets: 201 for creates, 200 for reads and a replay, 202 for a queued bulk replay. */
  const allowedStatus = (route: TableRoute) =>
    route.key === 'post /api/v1/admin/webhooks/replay'
      ? 202
      : // Allowed in, and answered: the sample address is on no suppression list.
        route.key === 'delete /api/v1/admin/email/suppressions/:email'
        ? 404
        : route.method === 'post' && !route.path.endsWith('/replay')
          ? 201
          : 200;

  it('guards exactly the routes under /api/v1/admin, and every one of them', () => {
    expect(adminRoutes.length).toBe(14);
    expect(routes.filter((r) => r.path.startsWith('/api/v1/admin')).map((r) => r.key)).toEqual(
      adminRoutes.map((r) => r.key),
    );
  });

  it('refuses non-admins (JWT, spoofed headers, API keys of users and of admins) and audits each attempt', async () => {
    const { api } = world;
    const user = await world.user('not-admin');
    const userKey = await world.apiKey(user.auth, 'user key');
    const adminKey = await world.apiKey(await world.admin('user_admin_keyholder'), 'admin key');
    const spoofed = {
      'X-Admin': 'true',
      'X-Role': 'admin',
      'X-User-Email': 'admin@example.com',
      'X-Forwarded-User': 'admin@example.com',
      'X-Original-URL': '/health',
      'X-Rewrite-URL': '/health',
    };
    // DESIGN 5: an API key on a route that refuses them is `api_key_not_allowed`, whoever owns it.
    const callers: [string, string, Record<string, string>, string][] = [
      ['user jwt', user.auth, {}, 'admin_required'],
      ['user jwt with spoofed headers', user.auth, spoofed, 'admin_required'],
      ['user api key', userKey.auth, {}, 'api_key_not_allowed'],
      ["admin's api key", adminKey.auth, {}, 'api_key_not_allowed'],
    ];
    const before = await tableCounts(api.prisma);
    const audited = () => api.prisma.auditLog.count({ where: { action: 'admin.unauthorized' } });
    const auditedBefore = await audited();
    for (const route of adminRoutes) {
      for (const [who, auth, headers, code] of callers) {
        const res = await call(api, route, { auth, headers, params: params(route), body: route.body });
        expect({ route: route.key, who, status: res.status, code: res.body.code }).toEqual({
          route: route.key,
          who,
          status: 403,
          code,
        });
      }
    }
    const attempts = adminRoutes.length * callers.length;
    expect((await audited()) - auditedBefore).toBe(attempts);
    // Nothing but those audit entries was written (no broadcast run, no recipients, no outbox job).
    expect(await tableCounts(api.prisma)).toEqual({ ...before, audit_logs: before.audit_logs + attempts });
    const entry = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'admin.unauthorized', userId: user.sub },
      orderBy: { createdAt: 'desc' },
    });
    expect(entry).toMatchObject({ actor: `user:${user.sub}`, resourceType: 'route' });
  });

  it('lets the allowlisted admin in on every admin route (e-mail compared ASCII case-insensitively)', async () => {
    const auth = await world.bearer('user_admin_upper', 'SECOND-Admin@Example.com');
    for (const route of adminRoutes) {
      const res = await call(world.api, route, { auth, params: params(route), body: route.body });
      expect({ route: route.key, status: res.status }).toEqual({
        route: route.key,
        status: allowedStatus(route),
      });
    }
  });

  it('refuses a soft-deleted admin', async () => {
    const { api } = world;
    const auth = await world.bearer('user_admin_leaving', LEAVING_ADMIN);
    expect((await api.http.get('/api/v1/admin/stats').set('Authorization', auth)).status).toBe(200);
    await api.prisma.user.update({
      where: { identityUserId: 'user_admin_leaving' },
      data: { deletedAt: new Date() },
    });
    for (const route of adminRoutes) {
      const res = await call(api, route, { auth, params: params(route), body: route.body });
      expect({ route: route.key, status: res.status, code: res.body.code }).toEqual({
        route: route.key,
        status: 403,
        code: 'account_deleted',
      });
    }
  });

  it('routes no other verb on any path, and ignores method-override headers', async () => {
    const { api } = world;
    const auth = await world.admin();
    const verbs = ['get', 'post', 'put', 'patch', 'delete'] as const;
    const failures: string[] = [];
    const paths = [...new Set(routes.map((r) => r.path))];
    for (const path of paths) {
      const served = routes.filter((r) => r.path === path).map((r) => r.method);
      for (const verb of verbs.filter((v) => !served.includes(v))) {
        const res = await call(api, { method: verb, path }, { auth, params: { id: randomUUID() }, body: {} });
        if (res.status !== 404) failures.push(`${verb} ${path} -> ${res.status}`);
      }
    }
    expect(failures).toEqual([]);
    const user = await world.user('override');
    for (const override of ['DELETE', 'PATCH', 'PUT']) {
      const res = await api.http
        .post('/api/v1/admin/users')
        .set('Authorization', user.auth)
        .set('X-HTTP-Method-Override', override)
        .set('X-Method-Override', override)
        .send({});
      expect(res.status).toBe(404);
    }
    const me = await api.http
      .post('/api/v1/me')
      .set('Authorization', user.auth)
      .set('X-HTTP-Method-Override', 'PATCH')
      .send({ locale: 'fr' });
    expect(me.status).toBe(404);
  });

  it('refuses API key management, account deletion, restore, export and billing changes with an API key', async () => {
    const { api } = world;
    const owner = await world.user('key-owner');
    const key = await world.apiKey(owner.auth, 'leaked');
    const sibling = await world.apiKey(owner.auth, 'sibling');
    const management = routes.filter((r) => r.apiKeyRefused && r.access === 'user');
    expect(management.map((r) => r.key).sort()).toEqual([
      'delete /api/v1/account/me',
      'delete /api/v1/api_keys/:id',
      'get /api/v1/account/me/export',
      'post /api/v1/account/me/restore',
      'post /api/v1/api_keys',
      'post /api/v1/billing/checkout',
      'post /api/v1/billing/checkout-token',
      'post /api/v1/billing/credit-packs/checkout',
      'post /api/v1/billing/subscription/cancel',
      'post /api/v1/billing/subscription/change',
      'post /api/v1/billing/subscription/resume',
    ]);
    for (const route of management) {
      const res = await call(api, route, { auth: key.auth, params: { id: sibling.id }, body: route.body });
      expect({ route: route.key, status: res.status, code: res.body.code }).toEqual({
        route: route.key,
        status: 403,
        code: 'api_key_not_allowed',
      });
    }
    const keys = await api.prisma.apiKey.findMany({ where: { userId: owner.user.id } });
    expect(keys).toHaveLength(2);
    expect(keys.every((k) => k.revokedAt === null)).toBe(true);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: owner.user.id } })).deletedAt).toBeNull();
    const lifecycle = ['user.deletion_requested', 'user.restored', 'user.exported'];
    expect(await api.prisma.auditLog.count({ where: { userId: owner.sub, action: { in: lifecycle } } })).toBe(
      0,
    );
    // The same key may still read its owner's data (a narrower credential, not a useless one).
    expect((await api.http.get('/api/v1/api_keys').set('Authorization', key.auth)).status).toBe(200);
  });
  it('refuses a leaked API key on billing changes and on consent, and never calls the provider', async () => {
    const { api } = world;
    // The subscription's webhook is applied by a worker, started for this test only (the other tests count
    // rows and must not see a worker's writes).
    const worker = await world.env.startWorker();
    const { user, subId } = await subscribe(api, 'PRO');
    await world.env.stop(worker);
    const jwt = await world.bearer(user.identityUserId, user.email);
    const key = await world.apiKey(jwt, 'leaked billing key');
    const calls = world.billing.requests.length;
    const attempts: [string, Record<string, unknown>][] = [
      ['/api/v1/billing/subscription/cancel', { cancel_immediately: true }],
      ['/api/v1/billing/subscription/change', { target_tier: 'TEAM' }],
      ['/api/v1/billing/subscription/resume', {}],
      ['/api/v1/billing/checkout', { tier: 'TEAM' }],
      ['/api/v1/billing/checkout-token', { tier: 'TEAM' }],
    ];
    for (const [path, body] of attempts) {
      const res = await api.http.post(path).set('Authorization', key.auth).send(body);
      expect({ path, status: res.status, code: res.body.code }).toEqual({
        path,
        status: 403,
        code: 'api_key_not_allowed',
      });
    }
    expect(world.billing.requests.length).toBe(calls);
    const subscription = await api.prisma.subscription.findFirstOrThrow({
      where: { providerSubscriptionId: subId },
    });
    expect(subscription.status).toBe('ACTIVE');
    expect(subscription.canceledAt).toBeNull();

    // Consent is the person's own declaration; the locale is not.
    const consent = await api.http
      .patch('/api/v1/me')
      .set('Authorization', key.auth)
      .send({ marketing_consent_given: true });
    expect({ status: consent.status, code: consent.body.code }).toEqual({
      status: 403,
      code: 'api_key_not_allowed',
    });
    const source = await api.http
      .patch('/api/v1/me')
      .set('Authorization', key.auth)
      .send({ locale: 'de', marketing_consent_given: false, marketing_consent_source: 'api' });
    expect(source.status).toBe(403);
    const stored = await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
    expect(stored).toMatchObject({ marketingConsentGiven: false, marketingConsentAt: null, locale: 'en' });
    expect(await api.prisma.emailConsentEvent.count({ where: { userId: user.id } })).toBe(0);
    const locale = await api.http.patch('/api/v1/me').set('Authorization', key.auth).send({ locale: 'fr' });
    expect({ status: locale.status, locale: locale.body.locale }).toEqual({ status: 200, locale: 'fr' });

    // Positive control: the signed-in owner gets through to the provider (the fake does not know this
    // subscription, so it answers an error; what matters is that it was asked).
    const cancel = await api.http
      .post('/api/v1/billing/subscription/cancel')
      .set('Authorization', await world.bearer(user.identityUserId, user.email))
      .send({ cancel_immediately: false });
    expect(cancel.status).not.toBe(403);
    expect(world.billing.requests.length).toBeGreaterThan(calls);
  });

  describe('admin only from a verified identity', () => {
    // Identity webhooks are applied by the worker; this block runs one.
    let identityWorker: INestApplication;
    beforeAll(async () => {
      identityWorker = await world.env.startWorker();
    });
    afterAll(() => world.env.stop(identityWorker));
    const adminStats = (auth: string) => world.api.http.get('/api/v1/admin/stats').set('Authorization', auth);
    const refusal = async (sub: string) =>
      (
        await world.api.prisma.auditLog.findFirstOrThrow({
          where: { action: 'admin.unauthorized', userId: sub },
          orderBy: { createdAt: 'desc' },
        })
      ).details as Record<string, unknown>;
    const identityEvent = async (
      type: 'user.created' | 'user.updated',
      sub: string,
      email: string,
      options: { verified?: boolean; updatedAt?: number } = {},
    ) => {
      const delivery = signIdentityEvent(identityUserEvent(type, sub, email, options));
      // Applied by the worker: wait for it.
      const res = await deliverIdentity(world.api, delivery);
      expect(res.status).toBe(200);
    };
    /** A token without an e-mail claim (the provider's default session token): the stored row decides. */
    const tokenOf = async (sub: string) => `Bearer ${await world.env.idp.token({ sub })}`;

    it('never creates an admin from an unverified e-mail claim, in any case', async () => {
      for (const email of [ADMIN_EMAIL, ADMIN_EMAIL.toUpperCase(), 'Admin@Example.COM']) {
        const sub = `user_unverified_${randomUUID().slice(0, 6)}`;
        const auth = `Bearer ${await world.env.idp.token({ sub, email, email_verified: false })}`;
        const res = await adminStats(auth);
        expect({ email, status: res.status, code: res.body.code }).toEqual({
          email,
          status: 401,
          code: 'unknown_user',
        });
        // Not even a user row: a JIT user takes its e-mail only from a verified claim.
        expect(await world.api.prisma.user.count({ where: { identityUserId: sub } })).toBe(0);
      }
      // The string "true" is not the boolean the provider sends.
      const sub = `user_stringly_${randomUUID().slice(0, 6)}`;
      const stringly = `Bearer ${await world.env.idp.token({ sub, email: BOSS, email_verified: 'true' })}`;
      expect((await adminStats(stringly)).status).toBe(401);
    });

    it('refuses an allowlisted address the identity provider has not verified, until it has', async () => {
      const sub = `user_later_${randomUUID().slice(0, 6)}`;
      await identityEvent('user.created', sub, VERIFY_LATER.toUpperCase(), { verified: false });
      const res = await adminStats(await tokenOf(sub));
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 'admin_required' });
      expect(await refusal(sub)).toMatchObject({ reason: 'email_not_verified' });
      // An unverified claim for the same address does not help either.
      const claim = `Bearer ${await world.env.idp.token({ sub, email: VERIFY_LATER.toUpperCase(), email_verified: false })}`;
      expect((await adminStats(claim)).status).toBe(403);

      await identityEvent('user.updated', sub, VERIFY_LATER.toUpperCase(), { verified: true });
      expect((await adminStats(await tokenOf(sub))).status).toBe(200);
      const granted = await world.api.prisma.auditLog.findMany({
        where: { action: 'admin.granted', userId: sub },
      });
      expect(granted).toHaveLength(1);
      expect(granted[0].actor).toBe(`user:${sub}`);
      expect(
        world.env.logs.lines.some((line) => line.includes('admin rights granted') && line.includes(sub)),
      ).toBe(true);
      // Granted once: the next requests write nothing more.
      expect((await adminStats(await tokenOf(sub))).status).toBe(200);
      expect(await world.api.prisma.auditLog.count({ where: { action: 'admin.granted', userId: sub } })).toBe(
        1,
      );
    });

    it('refuses an identity webhook that moves an unverified allowlisted address onto a user', async () => {
      const sub = `user_mover_${randomUUID().slice(0, 6)}`;
      await identityEvent('user.created', sub, `${sub}@example.com`);
      expect((await adminStats(await tokenOf(sub))).status).toBe(403);
      await identityEvent('user.updated', sub, BOSS, { verified: false });
      expect((await world.api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } })).email).toBe(
        BOSS,
      );
      const res = await adminStats(await tokenOf(sub));
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 'admin_required' });
      expect(await refusal(sub)).toMatchObject({ reason: 'email_not_verified' });
    });

    it('compares in canonical ASCII form: a Unicode look-alike of an allowlisted address is not it', async () => {
      // U+212A KELVIN SIGN lower-cases to "k": "\u212Aim@example.com".toLowerCase() === KIM.
      const lookAlike = `\u212A${KIM.slice(1)}`;
      expect(lookAlike.toLowerCase()).toBe(KIM);
      const sub = `user_kelvin_${randomUUID().slice(0, 6)}`;
      // As a token claim it is not an address at all.
      const claim = `Bearer ${await world.env.idp.token({ sub, email: lookAlike })}`;
      expect((await adminStats(claim)).status).toBe(401);
      // Stored (say, by an older release), verified: still not the allowlisted address.
      await createUser(world.api.prisma, { identityUserId: sub, email: lookAlike, emailVerified: true });
      const res = await adminStats(await tokenOf(sub));
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 'admin_required' });
      expect(await refusal(sub)).toMatchObject({ reason: 'not_allowlisted' });
    });

    it("never lets a token's e-mail claim replace the stored address", async () => {
      const sub = `user_claimer_${randomUUID().slice(0, 6)}`;
      await identityEvent('user.created', sub, `${sub}@example.com`);
      const res = await adminStats(`Bearer ${await world.env.idp.token({ sub, email: ADMIN_EMAIL })}`);
      expect(res.status).toBe(403);
      expect(await refusal(sub)).toMatchObject({ reason: 'not_allowlisted' });
      const user = await world.api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } });
      expect(user.email).toBe(`${sub}@example.com`);
    });

    it('binds an allowlisted address to one identity: a second holder is refused until the first lets go', async () => {
      const first = `user_boss_a_${randomUUID().slice(0, 6)}`;
      const second = `user_boss_b_${randomUUID().slice(0, 6)}`;
      await identityEvent('user.created', first, BOSS);
      await identityEvent('user.created', second, BOSS.toUpperCase());
      expect((await adminStats(await tokenOf(first))).status).toBe(200);
      const res = await adminStats(await tokenOf(second));
      expect({ status: res.status, code: res.body.code }).toEqual({ status: 403, code: 'admin_required' });
      expect(await refusal(second)).toMatchObject({ reason: 'address_held_by_another_identity' });
      // (Here: the first identity moves to another address; the second may take it over, audited.)
      await identityEvent('user.updated', first, `${first}@example.com`, { updatedAt: Date.now() + 1000 });
      expect((await adminStats(await tokenOf(first))).status).toBe(403);
      expect((await adminStats(await tokenOf(second))).status).toBe(200);
      const grant = await world.api.prisma.auditLog.findFirstOrThrow({
        where: { action: 'admin.granted', userId: second },
      });
      expect(grant.details).toMatchObject({ previous_holder: first });
    });
  });
});
