/**
 * OWASP API8:2023 Security Misconfiguration.
 *
 * Routes covered (derived from the application's router, checked against ROUTE_TABLE):
 * - every route, on success and on its error answers (401, 400 bad JSON, 404, 413): HSTS, a static CSP,
 *   X-Frame-Options DENY, Referrer-Policy no-referrer, Permissions-Policy, nosniff, no X-Powered-By;
 * - every route: CORS headers only for the exact configured origin (look-alike, scheme-changed, `null`
 *   and suffix origins get none, preflights included), never a wildcard and never credentials;
 * - every authenticated route: its answers are not cacheable by shared caches (`no-store`, or `private`
 *   where a route opts in), so tokens, keys and personal data never sit in a proxy;
 * - only the unsubscribe pages (and the docs) answer HTML; every error of every route is problem+json
 *   without stack traces, file paths, SQL or driver messages, in production as in test, including a 500
 *   and a database outage (503);
 * - POST /webhooks/identity failing inside its handler (a database error): the FAILED archive row and
 *   the `webhook.failed` audit entry name the error class and code only, never its stack trace, file
 *   paths or SQL; no audit entry stores such text whoever writes it;
 * - GET /docs, /docs/openapi.json, /docs-yaml and every other Swagger route: served outside production
 *   only (derived from the router of a non-production app);
 * - TRACE and other unrouted verbs are 404, never an echo;
 * - a deployed boot refuses TESTING=1, the public development secrets and localhost CORS origins.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { runBootChecks } from '../../src/config/boot-checks.js';
import { loadConfig } from '../../src/config/env.js';
import { AuditService } from '../../src/modules/audit/audit.service.js';
import { deliverIdentity, identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { ProbeModule } from '../support/probe.module.js';
import { TEST_SECRETS } from '../support/test-env.js';
import { inBatches } from './support/db.js';
import { call, expectRouteTableMatches, type TableRoute } from './support/route-table.js';
import { isDocsRoute, servedRoutes } from './support/routes.js';
import { SecurityWorld } from './support/world.js';

const ORIGIN = 'https://app.example.com';
const PROBLEM = /^application\/problem\+json/;
const INTERNALS =
  /\bat [\w.<>]+ \(|\.(ts|js|mjs):\d+|node_modules|\/src\/|\/dist\/|Prisma|prisma|SELECT |INSERT |ECONNREFUSED|stack|TypeError|ReferenceError/;

describe('API8 security misconfiguration', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let auth: string;

  beforeAll(async () => {
    world = await SecurityWorld.start({ env: { CORS_ORIGINS: ORIGIN }, worker: true });
    routes = expectRouteTableMatches(world.api.app);
    auth = (await world.user('misconfig')).auth;
  });
  afterAll(() => world.close());

  const authFor = async (route: TableRoute) =>
    route.access === 'admin' ? world.admin() : route.access === 'user' ? auth : undefined;
  const params = (route: TableRoute) => (route.params.length ? { id: randomUUID() } : {});

  const expectSecurityHeaders = (label: string, res: Response) => {
    const h = res.headers;
    expect({
      label,
      hsts: h['strict-transport-security'],
      csp:
        h['content-security-policy']?.includes("default-src 'self'") &&
        h['content-security-policy']?.includes("frame-ancestors 'none'"),
      frame: h['x-frame-options'],
      referrer: h['referrer-policy'],
      permissions: h['permissions-policy']?.includes('camera=()'),
      nosniff: h['x-content-type-options'],
      poweredBy: h['x-powered-by'],
    }).toEqual({
      label,
      hsts: 'max-age=31536000; includeSubDomains',
      csp: true,
      frame: 'DENY',
      referrer: 'no-referrer',
      permissions: true,
      nosniff: 'nosniff',
      poweredBy: undefined,
    });
  };

  it('sets the security headers on every route, on success and on errors', async () => {
    for (const route of routes.filter((r) => !r.last)) {
      const ok = await call(world.api, route, {
        auth: await authFor(route),
        params: params(route),
        body: route.body,
      });
      expectSecurityHeaders(`${route.key} ${ok.status}`, ok);
      const anonymous = await call(world.api, route, { params: params(route) });
      expectSecurityHeaders(`${route.key} anonymous ${anonymous.status}`, anonymous);
      if (route.method !== 'get') {
        const badJson = await call(world.api, route, {
          params: params(route),
          headers: { 'Content-Type': 'application/json' },
          body: '{"broken": ',
        });
        // A webhook receiver checks the signature over the raw bytes first: an unsigned body is 401
        // whatever it holds (a signed one that is not JSON is 400 and audited).
        const expected = route.key.includes(' /webhooks/') ? 401 : 400;
        expect({ route: route.key, status: badJson.status }).toEqual({ route: route.key, status: expected });
        expectSecurityHeaders(`${route.key} bad json`, badJson);
      }
    }
    expectSecurityHeaders('unknown route', await world.api.http.get(`/api/v1/${randomUUID()}`));
  });

  it('sends CORS headers only to the exact configured origin, on every route', async () => {
    const impostors = [
      'https://evil.example.com',
      'http://app.example.com',
      'https://app.example.com.evil.com',
      'https://evilapp.example.com',
      'https://app.example.com:8443',
      'null',
      `${ORIGIN}/`,
    ];
    const failures: string[] = [];
    await inBatches(
      routes.filter((r) => !r.last),
      4,
      async (route) => {
        for (const origin of impostors) {
          const res = await call(world.api, route, {
            auth: await authFor(route),
            params: params(route),
            headers: { Origin: origin },
          });
          const preflight = await world.api.http
            .options(route.path.replace(':id', randomUUID()))
            .set('Origin', origin)
            .set('Access-Control-Request-Method', route.method.toUpperCase())
            .set('Access-Control-Request-Headers', 'authorization,content-type');
          for (const r of [res, preflight]) {
            if (
              r.headers['access-control-allow-origin'] !== undefined ||
              r.headers['access-control-allow-credentials'] !== undefined
            )
              failures.push(`${route.key} ${origin}`);
          }
        }
        const allowed = await call(world.api, route, {
          auth: await authFor(route),
          params: params(route),
          headers: { Origin: ORIGIN },
        });
        if (allowed.headers['access-control-allow-origin'] !== ORIGIN)
          failures.push(`${route.key} allowed origin not echoed`);
        if (allowed.headers['access-control-allow-credentials'] !== undefined)
          failures.push(`${route.key} credentials`);
        if (!/Origin/i.test(allowed.headers.vary ?? '')) failures.push(`${route.key} no Vary: Origin`);
      },
    );
    expect(failures).toEqual([]);
  });

  it('keeps every authenticated answer out of shared caches', async () => {
    const failures: string[] = [];
    for (const route of routes.filter((r) => (r.access === 'user' || r.access === 'admin') && !r.last)) {
      const res = await call(world.api, route, {
        auth: await authFor(route),
        params: params(route),
        body: route.body,
      });
      const cache = res.headers['cache-control'] ?? '';
      if (!/no-store|private/.test(cache))
        failures.push(`${route.key} ${res.status} cache-control="${cache}"`);
      const denied = await call(world.api, route, { params: params(route) });
      if (!/no-store/.test(denied.headers['cache-control'] ?? ''))
        failures.push(`${route.key} 401 cache-control`);
    }
    expect(failures).toEqual([]);
  });

  it('answers HTML only on the unsubscribe pages, and every error as problem+json without internals', async () => {
    const failures: string[] = [];
    const check = (label: string, res: Response) => {
      const type = res.headers['content-type'] ?? '';
      if (
        /html/.test(type) &&
        !/^get \/api\/v1\/email\/unsubscribe|^post \/api\/v1\/email\/unsubscribe/.test(label)
      )
        failures.push(`${label}: html`);
      if (res.status >= 400) {
        if (!PROBLEM.test(type)) failures.push(`${label}: ${res.status} as ${type}`);
        if (INTERNALS.test(res.text ?? '')) failures.push(`${label}: internals in ${res.text.slice(0, 200)}`);
        const extra = Object.keys(res.body ?? {}).filter(
          (k) =>
            ![
              'type',
              'title',
              'status',
              'detail',
              'code',
              'request_id',
              'errors',
              'balance',
              'required',
            ].includes(k),
        );
        if (extra.length) failures.push(`${label}: unexpected keys ${extra.join(',')}`);
      }
    };
    for (const route of routes.filter((r) => !r.last)) {
      const a = await authFor(route);
      const attempts: [string, Promise<Response>][] = [
        ['sample', call(world.api, route, { auth: a, params: params(route), body: route.body })],
        ['anonymous', call(world.api, route, { params: params(route) })],
        [
          'malformed id',
          call(world.api, route, { auth: a, params: route.params.length ? { id: "1' OR 1=1 --" } : {} }),
        ],
        [
          'wrong types',
          call(world.api, route, {
            auth: a,
            params: params(route),
            body: [{ $gt: '' }],
            query: { page: { a: 1 } as never },
          }),
        ],
      ];
      for (const [what, pending] of attempts) check(`${route.key} ${what}`, await pending);
    }
    expect(failures).toEqual([]);
  });

  it('hides internals of a 500 and of a database outage, also in production', async () => {
    const prod = await world.env.startApi({
      config: world.env.configWith({ APP_ENV: 'production', CORS_ORIGINS: ORIGIN }),
      modules: [ProbeModule],
    });
    const boom = await prod.http.get('/api/v1/probe/boom');
    expect(boom.status).toBe(500);
    expect(boom.headers['content-type']).toMatch(PROBLEM);
    expect(boom.text).not.toMatch(INTERNALS);
    expect(boom.text).not.toContain('hunter2');

    const down = await world.env.startApi({
      config: world.env.configWith({
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/nowhere',
        APP_ENV: 'production',
        CORS_ORIGINS: ORIGIN,
      }),
    });
    const res = await down.http
      .get('/api/v1/me')
      .set('Authorization', await world.bearer(`user_down_${randomUUID()}`));
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.text).not.toMatch(INTERNALS);
    expect(res.text).not.toContain('127.0.0.1:1');
    expect(res.text).not.toContain('nowhere');
  });

  it('keeps stack traces, file paths and SQL out of webhook failure records and audit details', async () => {
    const { api } = world;
    const internals =
      /\b(INSERT|SELECT|UPDATE)\b|constraint|sec_trap|users|invocation|\/[\w.-]+\/[\w./-]+\.[cm]?[jt]s|\n\s+at\s/;
    // A database error inside the identity handler: Prisma's message quotes the statement and the schema.
    await api.prisma.$executeRawUnsafe(
      `ALTER TABLE users ADD CONSTRAINT sec_trap CHECK (email <> 'trap@example.com') NOT VALID`,
    );
    try {
      const delivery = signIdentityEvent(
        identityUserEvent('user.created', `user_trap_${randomUUID().slice(0, 6)}`, 'trap@example.com'),
      );
      // Accepted, then failed for good by the worker (every attempt hits the constraint).
      const res = await deliverIdentity(api, delivery);
      expect(res.status).toBe(200);
      expect(res.outcome).toBe('failed');
      expect(res.text).not.toMatch(internals);
      const row = await api.prisma.webhookEvent.findFirstOrThrow({ where: { eventId: delivery.id } });
      expect(row.status).toBe('FAILED');
      expect(row.error).toMatch(/internal error, see the logs$/);
      const audit = await api.prisma.auditLog.findFirstOrThrow({
        where: { action: 'webhook.failed', resourceId: delivery.id },
      });
      for (const text of [row.error ?? '', JSON.stringify(audit.details)])
        expect(text).not.toMatch(internals);
    } finally {
      await api.prisma.$executeRawUnsafe('ALTER TABLE users DROP CONSTRAINT sec_trap');
    }
    // Whoever writes an audit entry, such text is not stored.
    const err = new Error('update failed: UPDATE users SET email = $1 WHERE id = $2');
    await api.app.get(AuditService).recordStandalone({
      actor: 'system:test',
      action: 'test.internal_text',
      details: { error: err.stack ?? '', reason: 'at /srv/app/dist/modules/x.js:10:5' },
    });
    const entry = await api.prisma.auditLog.findFirstOrThrow({ where: { action: 'test.internal_text' } });
    expect(JSON.stringify(entry.details)).not.toMatch(internals);
  });

  it('serves the docs outside production only', async () => {
    const docs = servedRoutes(world.api.app).filter(isDocsRoute);
    expect(docs.length).toBeGreaterThanOrEqual(4);
    const prod = await world.env.startApi({
      config: world.env.configWith({ APP_ENV: 'production', CORS_ORIGINS: ORIGIN }),
    });
    expect(servedRoutes(prod.app).filter(isDocsRoute)).toEqual([]);
    for (const key of [...docs, 'get /docs-json', 'get /api-docs', 'get /swagger']) {
      const path = key.split(' ')[1];
      expect({ path, status: (await prod.http.get(path)).status }).toEqual({ path, status: 404 });
    }
    expect((await world.api.http.get('/docs/openapi.json')).status).toBe(200);
  });

  it('routes no TRACE and echoes nothing back', async () => {
    for (const route of routes) {
      const res = await world.api.http
        .trace(route.path.replace(':id', randomUUID()))
        .set('Authorization', 'Bearer secret-trace-token')
        .set('Cookie', 'session=secret-trace-cookie');
      expect({ route: route.key, status: res.status }).toEqual({ route: route.key, status: 404 });
      expect(res.text).not.toContain('secret-trace');
    }
  });

  it('refuses to boot deployed with TESTING=1, development secrets, localhost CORS origins or an http public URL', async () => {
    const probes = { database: async () => undefined, redis: async () => undefined };
    const deployed = {
      APP_ENV: 'production',
      COMPANY_LEGAL_NAME: 'Example GmbH',
      CORS_ORIGINS: ORIGIN,
      PUBLIC_BASE_URL: 'https://api.example.com',
      DATABASE_URL: 'postgresql://app@db.example.com/app?sslmode=verify-full',
      EMAIL_PROVIDER: 'resend',
      EMAIL_API_KEY: 're_live_0123456789',
      BILLING_API_URL: 'https://api.paddle.com',
      IDENTITY_JWKS_URL: 'https://identity.example.com/.well-known/jwks.json',
      IDENTITY_ISSUER: 'https://identity.example.com',
      IDENTITY_AUDIENCE: 'https://api.example.com',
      ...TEST_SECRETS,
    };
    expect(await runBootChecks(loadConfig(deployed), probes)).toBeNull();
    const refusals = [
      { TESTING: '1' },
      { IDENTITY_WEBHOOK_SECRET: '', BILLING_WEBHOOK_SECRET: '', EMAIL_UNSUBSCRIBE_SECRET: '' },
      { EMAIL_UNSUBSCRIBE_SECRET: 'short' },
      { CORS_ORIGINS: `${ORIGIN},http://localhost:3000` },
      { PUBLIC_BASE_URL: 'http://api.example.com' },
    ];
    for (const override of refusals) {
      const refusal = await runBootChecks(loadConfig({ ...deployed, ...override }), probes);
      expect({ override, refused: refusal !== null }).toEqual({ override, refused: true });
    }
  });

  it('answers requests the HTTP parser refuses with problem+json, the security headers and a request id', async () => {
    const { api } = world;
    const server = api.app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
        socket.write(request);
      });
    // A normal answer's security headers, which the parser's refusals must carry as well.
    const normal = await api.http.get('/api/v1/does-not-exist');
    const security = [
      'content-security-policy',
      'strict-transport-security',
      'x-frame-options',
      'x-content-type-options',
      'referrer-policy',
      'permissions-policy',
      'cross-origin-resource-policy',
    ];
    try {
      for (const [request, status] of [
        [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(20_000)}\r\n\r\n`, 431],
        ['GARBAGE / HTTP/1.1\r\n\r\n', 400],
        ['GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 400],
      ] as const) {
        const answer = await raw(request);
        const [head, body] = answer.split('\r\n\r\n');
        const lines = head.split('\r\n');
        expect(lines[0]).toBe(
          `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`,
        );
        const headers = Object.fromEntries(
          lines
            .slice(1)
            .map((line) => [
              line.slice(0, line.indexOf(':')).toLowerCase(),
              line.slice(line.indexOf(':') + 2),
            ]),
        );
        expect(headers['content-type']).toMatch(PROBLEM);
        for (const name of security)
          expect({ name, value: headers[name] }).toEqual({ name, value: normal.headers[name] });
        expect(headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
        const problem = JSON.parse(body);
        expect(problem).toMatchObject({ status, request_id: headers['x-request-id'] });
        expect(body).not.toContain('hhhh');
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
