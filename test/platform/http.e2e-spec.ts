import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ProbeModule } from '../support/probe.module.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const PROBLEM = /^application\/problem\+json/;

describe('HTTP surface: problem+json, request ids, body limits', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi({ modules: [ProbeModule] });
  });
  afterAll(() => env.close());

  it('answers unknown routes with a 404 problem document', async () => {
    const res = await api.http.get('/api/v1/does-not-exist');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.body).toEqual({
      type: 'urn:problem:not_found',
      title: 'Not found',
      status: 404,
      detail: expect.any(String),
      code: 'not_found',
      request_id: res.headers['x-request-id'],
    });
  });

  it('gives every response a request id and echoes a sane client one', async () => {
    const generated = await api.http.get('/health');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await api.http.get('/health').set('X-Request-Id', 'client-req-0001');
    expect(echoed.headers['x-request-id']).toBe('client-req-0001');
    const insane = await api.http.get('/health').set('X-Request-Id', 'bad id with spaces <script>');
    expect(insane.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('reports validation failures with errors[] per field', async () => {
    const res = await api.http
      .post('/api/v1/probe/echo')
      .send({ name: 'far too long a name', rating: 9, extra: 1 });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.body.code).toBe('validation_failed');
    const fields = res.body.errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(['extra', 'name', 'rating']);
    expect(res.body.errors.find((e: { field: string }) => e.field === 'extra').message).toBe(
      'property extra is not allowed',
    );
  });

  it('accepts a valid body', async () => {
    const res = await api.http.post('/api/v1/probe/echo').send({ name: 'ok', rating: 3 });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ name: 'ok', rating: 3 });
  });

  it('answers malformed JSON with 400 problem+json', async () => {
    const res = await api.http
      .post('/api/v1/probe/echo')
      .set('Content-Type', 'application/json')
      .send('{"name": ');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM);
  });

  it('refuses bodies over 1 MB with 413 problem+json', async () => {
    const res = await api.http
      .post('/api/v1/probe/echo')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10), rating: 1 }));
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.body).toMatchObject({ status: 413, code: 'payload_too_large' });
  });

  it('maps domain errors to their status and code', async () => {
    const res = await api.http.get('/api/v1/probe/conflict');
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'limit_reached', detail: 'Already there.', title: 'Conflict' });
  });

  it('answers a value too long for its column with a 400, stores nothing and warns in the log', async () => {
    const authorization = await api.bearer('user_too_long', 'too-long@example.com');
    const stored = await api.http
      .post('/api/v1/probe/unchecked-workspace')
      .set('Authorization', authorization)
      .send({ name: 'w'.repeat(200) });
    expect(stored.status).toBe(201);
    // A name no DTO checked: PostgreSQL refuses it (22001), Prisma reports P2000.
    const res = await api.http
      .post('/api/v1/probe/unchecked-workspace')
      .set('Authorization', authorization)
      .send({ name: '❤️'.repeat(200) });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.body).toEqual({
      type: 'urn:problem:validation_failed',
      title: 'Invalid request',
      status: 400,
      detail: 'A value is longer than its field allows.',
      code: 'validation_failed',
      errors: [],
      request_id: res.headers['x-request-id'],
    });
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_too_long' } });
    expect(await api.prisma.workspace.count({ where: { userId: user.id } })).toBe(1);
    const logged = env.logs.lines.filter((line) => line.includes(res.headers['x-request-id'])).join('\n');
    expect(logged).toContain('value too long for its column reached the database');
    expect(logged).not.toContain('request failed');
  });

  it('turns an unknown error into a 500 without internals, logged with its request id', async () => {
    const res = await api.http.get('/api/v1/probe/boom');
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.body).toEqual({
      type: 'urn:problem:internal_error',
      title: 'Internal server error',
      status: 500,
      detail: 'An unexpected error occurred.',
      code: 'internal_error',
      request_id: res.headers['x-request-id'],
    });
    expect(JSON.stringify(res.body)).not.toMatch(/hunter2|app\.ts|secret/);
    const logged = env.logs.lines.find(
      (line) => line.includes(res.headers['x-request-id']) && line.includes('request failed'),
    );
    expect(logged).toBeDefined();
  });

  it('never logs bearer tokens, query strings or bodies', async () => {
    const token = await api.token('user_logs', 'logs@example.com');
    await api.http.get('/api/v1/probe/whoami?t=secret-query-token').set('Authorization', `Bearer ${token}`);
    await api.http.post('/api/v1/probe/echo').send({ name: 'bodysecret', rating: 2 });
    const all = env.logs.lines.join('\n');
    expect(all).toContain('/api/v1/probe/whoami');
    expect(all).not.toContain(token);
    expect(all).not.toContain(token.split('.')[2]);
    expect(all).not.toContain('secret-query-token');
    expect(all).not.toContain('bodysecret');
  });
});

describe('security headers, CORS and API docs', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { CORS_ORIGINS: 'https://app.example.com' } });
    api = await env.startApi();
  });
  afterAll(() => env.close());

  it('sets HSTS, CSP, X-Frame-Options, Referrer-Policy and Permissions-Policy', async () => {
    const res = await api.http.get('/health');
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['permissions-policy']).toContain('camera=()');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it('answers the liveness probe (its fast path) with the headers every other route gets', async () => {
    const probe = await api.http.get('/health');
    const routed = await api.http.get('/status');
    const dynamic = new Set(['date', 'content-length', 'x-request-id', 'connection', 'keep-alive', 'etag']);
    const expected = Object.fromEntries(
      Object.entries(routed.headers).filter(([name]) => !dynamic.has(name)),
    );
    expect(Object.keys(expected)).toEqual(
      expect.arrayContaining(['content-security-policy', 'permissions-policy']),
    );
    for (const [name, value] of Object.entries(expected))
      expect([name, probe.headers[name]]).toEqual([name, value]);
    expect(probe.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(probe.body).toEqual({ status: 'ok', project_slug: 'subscription-service', environment: 'test' });
  });

  it('allows only the configured origins', async () => {
    const allowed = await api.http.get('/health').set('Origin', 'https://app.example.com');
    expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example.com');
    const denied = await api.http.get('/health').set('Origin', 'https://evil.example.com');
    expect(denied.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await api.http
      .options('/api/v1/me')
      .set('Origin', 'https://evil.example.com')
      .set('Access-Control-Request-Method', 'DELETE');
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    const goodPreflight = await api.http
      .options('/api/v1/me')
      .set('Origin', 'https://app.example.com')
      .set('Access-Control-Request-Method', 'PATCH')
      .set('Access-Control-Request-Headers', 'authorization,content-type');
    expect(goodPreflight.status).toBe(204);
    expect(goodPreflight.headers['access-control-allow-methods']).toContain('PATCH');
  });

  it('lets a browser read the headers a frontend uses, the export filename included', async () => {
    const exported = await api.http
      .get('/api/v1/account/me/export')
      .set('Origin', 'https://app.example.com')
      .set('Authorization', await api.bearer('user_cors_export', 'cors-export@example.com'));
    expect(exported.status).toBe(200);
    expect(exported.headers['content-disposition']).toMatch(/^attachment; filename="[^"]+\.json"$/);
    expect(exported.headers['access-control-allow-origin']).toBe('https://app.example.com');
    // Without Content-Disposition here, fetch() in the page sees no such header (CORS safelists few).
    const exposed = (exported.headers['access-control-expose-headers'] ?? '')
      .split(',')
      .map((name: string) => name.trim().toLowerCase());
    expect(exposed.sort()).toEqual(
      [
        'content-disposition',
        'idempotent-replayed',
        'ratelimit-limit',
        'ratelimit-policy',
        'ratelimit-remaining',
        'ratelimit-reset',
        'retry-after',
        'x-request-id',
      ].sort(),
    );
  });

  it('denies every origin when CORS_ORIGINS is empty', async () => {
    const closed = await env.startApi({ config: env.configWith({ CORS_ORIGINS: '' }) });
    const res = await closed.http.get('/health').set('Origin', 'https://app.example.com');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('serves the API docs outside production', async () => {
    const page = await api.http.get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('swagger');
    const spec = await api.http.get('/docs/openapi.json');
    expect(spec.status).toBe(200);
    expect(spec.body.paths['/health/ready']).toBeDefined();
    expect(spec.body.components.securitySchemes.bearer).toMatchObject({ scheme: 'bearer' });
  });

  it('serves no docs in production', async () => {
    const prod = await env.startApi({ config: env.configWith({ APP_ENV: 'production' }) });
    expect((await prod.http.get('/docs')).status).toBe(404);
    expect((await prod.http.get('/docs/openapi.json')).status).toBe(404);
    expect((await prod.http.get('/docs-json')).status).toBe(404);
  });
});
