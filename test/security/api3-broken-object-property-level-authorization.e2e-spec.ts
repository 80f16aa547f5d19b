/**
 * OWASP API3:2023 Broken Object Property Level Authorization (mass assignment and excessive exposure).
 *
 * Routes covered (derived from the application, checked against ROUTE_TABLE):
 * - every route that takes a body DTO (POST/PATCH /api/v1/saved_searches, /workspaces, POST /api_keys,
 *   PATCH /me, POST /account/me/signup-metadata, /feedback, /billing/checkout-token, /billing/checkout,
 *   /billing/subscription/{cancel,change,resume}, /ai/completions, /admin/broadcasts) refuses each
 *   server-controlled property (id, user_id, current_tier, credit fields, deleted_at, timestamps, admin
 *   flags, key material, ...) with a 400 naming it, at the top level and inside nested DTOs;
 * - every route that takes a query DTO (owned lists, /credits, admin lists) refuses them the same way;
 * - the body-less state-changing routes (POST /account/me/restore, DELETE .../:id) ignore such bodies;
 * - afterwards the caller's tier, credits, e-mail and deletion state are unchanged and nothing was
 *   written for the other user;
 * - every JSON answer of every route carries only the properties its OpenAPI schema documents (no
 *   secret hashes, provider customer ids or other columns), API keys show their secret only on create.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { grantCredits } from '../support/credits.js';
import { inBatches } from './support/db.js';
import { type OpenApiDocument, responseSchema, undocumentedProperties } from './support/openapi.js';
import {
  call,
  expectRouteTableMatches,
  type IdKind,
  inCallOrder,
  type TableRoute,
} from './support/route-table.js';
import { dtoProperties, nestedDtoProperties } from './support/routes.js';
import { archivedEvent, SecurityWorld } from './support/world.js';

describe('API3 broken object property level authorization', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let caller: { auth: string; userId: string; sub: string; email: string };
  let victimId: string;
  let ownIds: Record<IdKind, string>;
  let serverControlled: Record<string, unknown>;

  beforeAll(async () => {
    world = await SecurityWorld.start();
    routes = expectRouteTableMatches(world.api.app);
    const victim = await world.user('victim');
    victimId = victim.user.id;
    const me = await world.user('caller');
    caller = { auth: me.auth, userId: me.user.id, sub: me.sub, email: me.user.email };
    serverControlled = {
      id: randomUUID(),
      user_id: victimId,
      userId: victimId,
      owner_id: victimId,
      identity_user_id: victim.sub,
      email: 'admin@example.com',
      current_tier: 'TEAM',
      currentTier: 'TEAM',
      credit_balance: 1_000_000,
      creditBalance: 1_000_000,
      credits: 1_000_000,
      balance: 1_000_000,
      delta: 1_000_000,
      kind: 'grant',
      job_id: 'grant-forged',
      deleted_at: null,
      deletedAt: null,
      hard_delete_after: null,
      created_at: '2000-01-01T00:00:00.000Z',
      updated_at: '2000-01-01T00:00:00.000Z',
      is_admin: true,
      admin: true,
      role: 'admin',
      secret: 'sk_live_forged',
      secret_hash: '0'.repeat(64),
      prefix: 'sk_live_forged',
      revoked_at: null,
      last_used_at: null,
      status: 'ACTIVE',
      marketing_consent_at: '2000-01-01T00:00:00.000Z',
      billing_customer_id: 'ctm_forged',
      attribution_recorded_at: null,
      email_disposable: false,
      created_by: 'admin@example.com',
    };
    const own = async (path: string, body: object) => {
      const res = await world.api.http.post(path).set('Authorization', caller.auth).send(body);
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const broadcast = await world.api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', await world.admin())
      .send({ template_key: 'welcome', audience: {} });
    ownIds = {
      saved_search: await own('/api/v1/saved_searches', { name: 'own', query: 'q' }),
      workspace: await own('/api/v1/workspaces', { name: 'own' }),
      api_key: await own('/api/v1/api_keys', { name: 'own' }),
      broadcast: broadcast.body.id,
      webhook_event: (await archivedEvent(world.api)).id,
    };
  });
  afterAll(() => world.close());

  const authFor = async (route: TableRoute) => (route.access === 'admin' ? world.admin() : caller.auth);
  const paramsFor = (route: TableRoute) => (route.idOf ? { id: ownIds[route.idOf] } : {});

  it('refuses every server-controlled property on every body DTO, top level and nested', async () => {
    const bodyRoutes = routes.filter((r) => r.bodyDto !== null);
    expect(bodyRoutes.length).toBeGreaterThanOrEqual(14);
    const failures: string[] = [];
    for (const route of bodyRoutes) {
      const accepted = dtoProperties(route.bodyDto!);
      const sample = route.body ?? {};
      const attempts: { field: string; body: Record<string, unknown> }[] = [];
      for (const [key, value] of Object.entries(serverControlled)) {
        if (accepted.includes(key)) continue;
        attempts.push({ field: key, body: { ...sample, [key]: value } });
        for (const nested of nestedDtoProperties(route.bodyDto!)) {
          const inner = sample[nested];
          if (Array.isArray(inner) && inner.length > 0) {
            if (key in (inner[0] as object)) continue;
            attempts.push({
              field: `${nested}.0.${key}`,
              body: { ...sample, [nested]: [{ ...(inner[0] as object), [key]: value }, ...inner.slice(1)] },
            });
          } else if (inner && typeof inner === 'object' && !(key in inner)) {
            attempts.push({
              field: `${nested}.${key}`,
              body: { ...sample, [nested]: { ...inner, [key]: value } },
            });
          }
        }
      }
      const auth = await authFor(route);
      const results = await inBatches(attempts, 8, async ({ field, body }) => ({
        field,
        res: await call(world.api, route, { auth, params: paramsFor(route), body }),
      }));
      for (const { field, res } of results) {
        const named = (res.body.errors ?? []).some(
          (e: { field: string; message: string }) => e.field === field && /is not allowed/.test(e.message),
        );
        if (res.status !== 400 || !named) failures.push(`${route.key} ${field} -> ${res.status}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('refuses server-controlled properties in every query DTO', async () => {
    const queryRoutes = routes.filter((r) => r.queryDto !== null);
    expect(queryRoutes.length).toBeGreaterThanOrEqual(7);
    const failures: string[] = [];
    for (const route of queryRoutes) {
      const accepted = dtoProperties(route.queryDto!);
      const auth = await authFor(route);
      for (const [key, value] of Object.entries(serverControlled)) {
        if (accepted.includes(key)) continue;
        const res = await call(world.api, route, { auth, query: { [key]: String(value) } });
        if (res.status !== 400) failures.push(`${route.key} ?${key} -> ${res.status}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('leaves server-controlled state alone after every route took such bodies', async () => {
    const { prisma } = world.api;
    const victimBefore = await prisma.user.findUniqueOrThrow({ where: { id: victimId } });
    for (const route of inCallOrder(
      routes.filter((r) => r.access === 'user' && !r.last && r.method !== 'get'),
    )) {
      if (route.bodyDto !== null) continue;
      const res = await call(world.api, route, {
        auth: caller.auth,
        params: route.idOf ? { id: randomUUID() } : {},
        body: serverControlled,
      });
      expect(res.status).toBeLessThan(500);
    }
    const me = await prisma.user.findUniqueOrThrow({ where: { id: caller.userId } });
    expect(me).toMatchObject({
      currentTier: 'FREE',
      creditBalance: 0,
      email: caller.email,
      identityUserId: caller.sub,
      deletedAt: null,
      billingCustomerId: null,
    });
    expect(await prisma.creditTransaction.count({ where: { userId: caller.userId } })).toBe(0);
    const victimAfter = await prisma.user.findUniqueOrThrow({ where: { id: victimId } });
    expect({ ...victimAfter, lastActiveAt: null }).toEqual({ ...victimBefore, lastActiveAt: null });
    const victimRows = await Promise.all([
      prisma.savedSearch.count({ where: { userId: victimId } }),
      prisma.workspace.count({ where: { userId: victimId } }),
      prisma.apiKey.count({ where: { userId: victimId } }),
      prisma.feedback.count({ where: { userId: victimId } }),
    ]);
    expect(victimRows).toEqual([0, 0, 0, 0]);
  });

  it('shows an API key secret only in the create answer', async () => {
    const created = await world.api.http
      .post('/api/v1/api_keys')
      .set('Authorization', caller.auth)
      .send({ name: 'once' });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    const secret = created.body.secret as string;
    const list = await world.api.http.get('/api/v1/api_keys').set('Authorization', caller.auth);
    const one = await world.api.http
      .get(`/api/v1/api_keys/${created.body.id}`)
      .set('Authorization', caller.auth);
    const exported = await world.api.http.get('/api/v1/account/me/export').set('Authorization', caller.auth);
    for (const res of [list, one, exported]) {
      expect(res.status).toBe(200);
      expect(res.text).not.toContain(secret);
      expect(res.text).not.toContain(secret.slice(-20));
    }
  });

  it('answers every route with only the properties its schema documents', async () => {
    const { api } = world;
    const doc = (await api.http.get('/docs/openapi.json')).body as OpenApiDocument;
    // Give the caller something in every collection, so the answers are not empty lists.
    await grantCredits(api, caller.userId, 50);
    await api.http.post('/api/v1/feedback').set('Authorization', caller.auth).send({ message: 'x' });
    const checked: string[] = [];
    const undocumented: string[] = [];
    // Last: the deletion of the caller's account (its answer is checked like the others).
    for (const route of inCallOrder(routes.filter((r) => r.access === 'user' || r.access === 'admin'))) {
      const res = await call(api, route, {
        auth: await authFor(route),
        params: paramsFor(route),
        body: route.body,
      });
      expect(res.status).toBeLessThan(500);
      if (/secret_hash|secretHash|password/i.test(res.text ?? ''))
        undocumented.push(`${route.key}: key material`);
      if (res.status >= 300 || !/json/.test(res.headers['content-type'] ?? '')) continue;
      const schema = responseSchema(doc, route.method, route.path, res.status);
      if (!schema) continue;
      checked.push(route.key);
      undocumented.push(...undocumentedProperties(doc, schema, res.body).map((p) => `${route.key} ${p}`));
    }
    expect(undocumented).toEqual([]);
    // Every JSON answer of a protected route is documented, except the export (the user's own rows).
    expect(checked.length).toBeGreaterThanOrEqual(24);
  });
});
