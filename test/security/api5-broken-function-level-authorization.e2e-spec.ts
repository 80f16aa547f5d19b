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
 *   account, nor undo a deletion the identity provider made, nor download everything.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { tableCounts } from './support/db.js';
import { call, expectRouteTableMatches, type TableRoute } from './support/route-table.js';
import { archivedEvent, SecurityWorld } from './support/world.js';

describe('API5 broken function level authorization', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let adminRoutes: TableRoute[];
  let broadcastId: string;

  beforeAll(async () => {
    world = await SecurityWorld.start();
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
      : route.method === 'post' && !route.path.endsWith('/replay')
        ? 201
        : 200;

  it('guards exactly the routes under /api/v1/admin, and every one of them', () => {
    expect(adminRoutes.length).toBe(11);
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
    const callers: [string, string, Record<string, string>][] = [
      ['user jwt', user.auth, {}],
      ['user jwt with spoofed headers', user.auth, spoofed],
      ['user api key', userKey.auth, {}],
      ["admin's api key", adminKey.auth, {}],
    ];
    const before = await tableCounts(api.prisma);
    const audited = () => api.prisma.auditLog.count({ where: { action: 'admin.unauthorized' } });
    const auditedBefore = await audited();
    for (const route of adminRoutes) {
      for (const [who, auth, headers] of callers) {
        const res = await call(api, route, { auth, headers, params: params(route), body: route.body });
        expect({ route: route.key, who, status: res.status, code: res.body.code }).toEqual({
          route: route.key,
          who,
          status: 403,
          code: 'admin_required',
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

  it('lets the allowlisted admin in on every admin route (e-mail compared case-insensitively)', async () => {
    const auth = await world.bearer('user_admin_upper', 'ADMIN@Example.com');
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
    const auth = await world.admin('user_admin_leaving');
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

  it('refuses API key management, account deletion, restore and export with an API key', async () => {
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
});
