/**
 * OWASP API9:2023 Improper Inventory Management.
 *
 * Routes covered: all of them, as an inventory.
 * - the routes the Express router serves, the routes the controllers declare, the security suite's
 *   ROUTE_TABLE and the operations of the OpenAPI document are the same set (no undocumented route, no
 *   documented route that is not served);
 * - every documented operation declares bearer security exactly when the route needs a token;
 * - the unauthenticated surface is exactly the spec's (rule 8): /health, /health/ready, /status, the two
 *   webhook receivers and /api/v1/email/unsubscribe;
 * - one API version only; health and webhooks are not reachable under /api/v1, nothing under /api/v0 or
 *   /api/v2; no debug, metrics, test-probe or framework console routes on the public port, with or
 *   without an admin token;
 * - the worker's HTTP surface is only /health, /health/ready, /status and /metrics;
 * - the OpenAPI document names the released version.
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type OpenApiDocument, openApiPath } from './support/openapi.js';
import { expectRouteTableMatches, type TableRoute } from './support/route-table.js';
import { declaredRoutes, isDocsRoute, servedRoutes } from './support/routes.js';
import { SecurityWorld } from './support/world.js';

describe('API9 improper inventory management', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let doc: OpenApiDocument & { info: { version: string } };

  beforeAll(async () => {
    world = await SecurityWorld.start({ worker: true });
    routes = expectRouteTableMatches(world.api.app);
    doc = (await world.api.http.get('/docs/openapi.json')).body;
  });
  afterAll(() => world.close());

  const documented = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`));

  it('serves, declares, documents and lists exactly the same routes', () => {
    const served = servedRoutes(world.api.app).filter((k) => !isDocsRoute(k));
    const declared = declaredRoutes(world.api.app).map((r) => r.key);
    expect(served).toEqual([...declared].sort());
    const asOpenApi = served.map((key) => {
      const [method, path] = key.split(' ');
      return `${method} ${openApiPath(path)}`;
    });
    expect(documented().sort()).toEqual(asOpenApi.sort());
  });

  it('documents bearer security exactly on the routes that need a token', () => {
    const mismatches = routes
      .map((route) => {
        const op = doc.paths[openApiPath(route.path)][route.method];
        const bearer = (op.security ?? []).some((s) => Object.keys(s as object).includes('bearer'));
        return { route: route.key, bearer, needsToken: route.access === 'user' || route.access === 'admin' };
      })
      .filter((r) => r.bearer !== r.needsToken);
    expect(mismatches).toEqual([]);
  });

  it('exposes exactly the spec’s unauthenticated surface', () => {
    expect(routes.filter((r) => r.isPublic).map((r) => r.key)).toEqual([
      'get /api/v1/email/confirm',
      'get /api/v1/email/unsubscribe',
      'get /health',
      'get /health/ready',
      'get /status',
      'post /api/v1/email/confirm',
      'post /api/v1/email/unsubscribe',
      'post /webhooks/billing',
      'post /webhooks/email',
      'post /webhooks/identity',
    ]);
  });

  it('serves one API version and no debug, metrics or framework routes on the public port', async () => {
    const served = servedRoutes(world.api.app).filter((k) => !isDocsRoute(k));
    for (const key of served)
      expect(key).toMatch(/^(get|post|patch|put|delete) (\/api\/v1\/|\/health|\/status$|\/webhooks\/)/);
    const probes = [
      '/api/v1/health',
      '/api/v1/health/ready',
      '/api/v1/status',
      '/api/v1/webhooks/billing',
      '/api/v1/webhooks/identity',
      '/api/v0/me',
      '/api/v2/me',
      '/api/me',
      '/v1/me',
      '/me',
      '/metrics',
      '/api/v1/metrics',
      '/debug',
      '/api/v1/debug',
      '/api/v1/admin/debug',
      '/api/v1/admin/config',
      '/api/v1/admin/impersonate',
      '/api/v1/admin/sudo',
      '/api/v1/probe/whoami',
      '/api/v1/probe/boom',
      '/api/v1/test',
      '/actuator',
      '/actuator/env',
      '/server-status',
      '/graphql',
      '/.env',
      '/.git/config',
      '/healthz',
      '/admin',
      '/queues',
      '/bull-board',
      `/api/v1/users/${randomUUID()}`,
    ];
    const admin = await world.admin();
    const failures: string[] = [];
    for (const path of probes) {
      for (const method of ['get', 'post'] as const) {
        for (const auth of [undefined, admin]) {
          let req = world.api.http[method](path);
          if (auth) req = req.set('Authorization', auth);
          const res = await req;
          if (res.status !== 404)
            failures.push(`${method} ${path}${auth ? ' (admin)' : ''} -> ${res.status}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('gives the worker no HTTP surface but the operational trio and its metrics', () => {
    expect(servedRoutes(world.worker!)).toEqual([
      'get /health',
      'get /health/ready',
      'get /metrics',
      'get /status',
    ]);
  });

  it('names the released version in the OpenAPI document', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(doc.info.version).toBe(pkg.version);
  });
});
