/**
 * OWASP API4:2023 Unrestricted Resource Consumption.
 *
 * Routes covered (derived from the application, checked against ROUTE_TABLE):
 * - every route that reads a body (all POST/PATCH routes, webhooks and the form-encoded unsubscribe
 *   included): over the size limit -> 413 problem+json, before authentication;
 * - every route with a body DTO: JSON nested thousands of levels deep -> 400 (no stack overflow), every
 *   top-level field refuses a 300,000-character string and a 5,000-element array;
 * - every list route (owned lists, /credits, admin users/audit/broadcasts): a huge `page_size` is either
 *   normalised to at most 200 rows or refused with 400, a huge `page` is served without a 5xx;
 * - POST /api/v1/saved_searches, /workspaces, /api_keys: bounded per user by the tier limits (409);
 * - POST /api/v1/ai/completions: per-user rate limit (429 with Retry-After and RateLimit-* headers),
 *   refused calls cost nothing, other users are unaffected;
 * - oversized URLs, headers and query-parameter floods on every route: never a 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { grantCredits } from '../support/credits.js';
import { inBatches } from './support/db.js';
import { call, expectRouteTableMatches, type TableRoute } from './support/route-table.js';
import { dtoProperties } from './support/routes.js';
import { SecurityWorld } from './support/world.js';

const PROBLEM = /^application\/problem\+json/;

describe('API4 unrestricted resource consumption', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let auth: string;

  beforeAll(async () => {
    world = await SecurityWorld.start();
    routes = expectRouteTableMatches(world.api.app);
    auth = (await world.user('consumer')).auth;
  });
  afterAll(() => world.close());

  const authFor = async (route: TableRoute) => (route.access === 'admin' ? world.admin() : auth);
  const sampleParams = (route: TableRoute) =>
    route.params.length ? { id: '6f1c1f0e-8a53-4c9b-9d1e-3b5c2a7e4d10' } : {};

  it('refuses oversized bodies on every route that reads one, before authentication', async () => {
    const bodyRoutes = routes.filter(
      (r) => r.method === 'post' || r.method === 'patch' || r.method === 'put',
    );
    expect(bodyRoutes.length).toBeGreaterThanOrEqual(19);
    const json = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 16) });
    const form = `List-Unsubscribe=One-Click&pad=${'x'.repeat(70 * 1024)}`;
    for (const route of bodyRoutes) {
      const asJson = await call(world.api, route, {
        params: sampleParams(route),
        headers: { 'Content-Type': 'application/json' },
        body: json,
      });
      expect({ route: route.key, status: asJson.status }).toEqual({ route: route.key, status: 413 });
      expect(asJson.headers['content-type']).toMatch(PROBLEM);
      expect(asJson.body).toMatchObject({ status: 413, code: 'payload_too_large' });
      const asForm = await call(world.api, route, {
        params: sampleParams(route),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: form,
      });
      expect({ route: route.key, status: asForm.status }).toEqual({ route: route.key, status: 413 });
    }
  });

  it('refuses JSON nested thousands of levels deep on every body DTO route with a 400', async () => {
    // Sent as text: a client-side serializer would overflow its own stack on these.
    const deepArray = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const deepObject = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;
    for (const route of routes.filter((r) => r.bodyDto)) {
      const field = Object.keys(route.body ?? {})[0] ?? dtoProperties(route.bodyDto!)[0];
      for (const deep of [deepArray, deepObject]) {
        const res = await call(world.api, route, {
          auth: await authFor(route),
          params: sampleParams(route),
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ ...route.body, [field]: '__deep__' }).replace('"__deep__"', deep),
        });
        expect({ route: route.key, status: res.status }).toEqual({ route: route.key, status: 400 });
        expect(res.headers['content-type']).toMatch(PROBLEM);
      }
    }
  });

  it('bounds the length of every string and array field of every body DTO', async () => {
    const failures: string[] = [];
    const huge = 'y'.repeat(300_000);
    const many = Array.from({ length: 5_000 }, () => 'PRO');
    for (const route of routes.filter((r) => r.bodyDto)) {
      const fields = dtoProperties(route.bodyDto!);
      const attempts = fields.flatMap((field) => [
        { field, kind: 'string', body: { ...route.body, [field]: huge } },
        { field, kind: 'array', body: { ...route.body, [field]: many } },
      ]);
      const a = await authFor(route);
      const results = await inBatches(attempts, 6, async (attempt) => ({
        ...attempt,
        status: (await call(world.api, route, { auth: a, params: sampleParams(route), body: attempt.body }))
          .status,
      }));
      for (const r of results)
        if (r.status !== 400) failures.push(`${route.key} ${r.field} ${r.kind} -> ${r.status}`);
    }
    expect(failures).toEqual([]);
  });

  it('normalises or refuses huge page sizes on every list route', async () => {
    const lists = routes.filter((r) => r.queryDto && dtoProperties(r.queryDto).includes('page_size'));
    expect(lists.map((r) => r.key).sort()).toEqual([
      'get /api/v1/admin/audit',
      'get /api/v1/admin/broadcasts',
      'get /api/v1/admin/users',
      'get /api/v1/admin/webhooks',
      'get /api/v1/api_keys',
      'get /api/v1/credits',
      'get /api/v1/saved_searches',
      'get /api/v1/workspaces',
    ]);
    for (const route of lists) {
      const queries: Record<string, string | string[]>[] = [
        { page_size: '1000000' },
        { page_size: '201' },
        { page_size: '99999999999999999999999' },
        { page: '1000000000000', page_size: '200' },
        { page_size: ['1', '100000'] },
      ];
      for (const query of queries) {
        const res = await call(world.api, route, { auth: await authFor(route), query });
        const ok =
          res.status === 400 ||
          (res.status === 200 && res.body.page_size <= 200 && res.body.items.length <= res.body.page_size);
        expect({ route: route.key, query, status: res.status, ok }).toEqual({
          route: route.key,
          query,
          status: res.status,
          ok: true,
        });
      }
    }
  });

  it('bounds every owned collection per user by the tier limit', async () => {
    const creates = routes.filter(
      (r) =>
        r.method === 'post' &&
        routes.some((o) => o.idOf && o.path === `${r.path}/:id` && o.access === 'user'),
    );
    expect(creates.map((r) => r.key).sort()).toEqual([
      'post /api/v1/api_keys',
      'post /api/v1/saved_searches',
      'post /api/v1/workspaces',
    ]);
    const limits = world.api.config.project.tiers.FREE.limits;
    const expected: Record<string, number> = {
      'post /api/v1/api_keys': limits.apiKeys,
      'post /api/v1/saved_searches': limits.savedSearches,
      'post /api/v1/workspaces': limits.workspaces,
    };
    for (const route of creates) {
      const owner = (await world.user('collector')).auth;
      let created = 0;
      let last;
      for (let i = 0; i <= expected[route.key]; i += 1) {
        last = await call(world.api, route, { auth: owner, body: route.body });
        if (last.status !== 201) break;
        created += 1;
      }
      expect({ route: route.key, created, status: last?.status, code: last?.body.code }).toEqual({
        route: route.key,
        created: expected[route.key],
        status: 409,
        code: 'limit_reached',
      });
    }
  });

  it('rate limits metered completions per user, charges nothing for refused calls and spares others', async () => {
    const { api } = world;
    const spender = await world.user('spender');
    await grantCredits(api, spender.user.id, 1000);
    const perMinute = api.config.project.tiers.FREE.limits.aiRequestsPerMinute;
    const body = routes.find((r) => r.key === 'post /api/v1/ai/completions')!.body!;
    const statuses: number[] = [];
    let refused;
    for (let i = 0; i < perMinute + 2; i += 1) {
      const res = await api.http.post('/api/v1/ai/completions').set('Authorization', spender.auth).send(body);
      statuses.push(res.status);
      if (res.status === 429) refused = res;
    }
    expect(statuses).toEqual([...Array(perMinute).fill(200), 429, 429]);
    expect(refused!.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused!.headers['ratelimit-remaining']).toBe('0');
    expect(refused!.headers['content-type']).toMatch(PROBLEM);
    const spends = await api.prisma.creditTransaction.count({
      where: { userId: spender.user.id, kind: 'spend' },
    });
    expect(spends).toBe(perMinute);
    const bystander = await world.user('bystander');
    await grantCredits(api, bystander.user.id, 10);
    expect(
      (await api.http.post('/api/v1/ai/completions').set('Authorization', bystander.auth).send(body)).status,
    ).toBe(200);
  });

  it('survives oversized URLs, headers and query-parameter floods on every route without a 5xx', async () => {
    const flood = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`p${i}`, '1']));
    const failures: string[] = [];
    for (const route of routes) {
      const a = route.access === 'user' || route.access === 'admin' ? await authFor(route) : undefined;
      const attempts = [
        call(world.api, route, { auth: a, params: sampleParams(route), query: flood }),
        call(world.api, route, { auth: a, params: sampleParams(route), query: { q: 'z'.repeat(20_000) } }),
        call(world.api, route, {
          auth: a,
          params: sampleParams(route),
          headers: { 'X-Big': 'h'.repeat(20_000) },
        }),
      ];
      for (const res of await Promise.all(attempts)) {
        if (res.status >= 500) failures.push(`${route.key} -> ${res.status}`);
      }
    }
    expect(failures).toEqual([]);
    expect((await world.api.http.get('/health/ready')).status).toBe(200);
  });
});
