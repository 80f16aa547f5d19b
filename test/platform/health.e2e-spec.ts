import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { FakeVectorStore } from '../fakes/vector-store.js';
import {
  missingProperties,
  type OpenApiDocument,
  responseSchema,
  undocumentedProperties,
} from '../security/support/openapi.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('health: /health, /health/ready, /status', () => {
  let env: TestEnv;
  let store: FakeVectorStore;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    store = await FakeVectorStore.start();
    env.onClose(() => store.close());
    api = await env.startApi({ config: env.configWith({ VECTOR_STORE_URL: store.url }) });
  });
  afterAll(() => env.close());

  beforeEach(() => {
    store.status = 200;
    store.delayMs = 0;
  });

  it('GET /health is liveness only, public, with the project and environment', async () => {
    const before = store.requests;
    const res = await api.http.get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', project_slug: 'subscription-service', environment: 'test' });
    expect(store.requests).toBe(before);
  });

  it('GET /health/ready checks database, redis and the vector store (in parallel: health.probes.spec.ts)', async () => {
    const res = await api.http.get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    expect(new Date(res.body.checked_at).toString()).not.toBe('Invalid Date');
    expect(res.body.checks.map((c: { name: string }) => c.name)).toEqual(['database', 'redis', 'chromadb']);
    for (const check of res.body.checks) {
      expect(check).toEqual({ name: check.name, ok: true, message: 'ok', latency_ms: expect.any(Number) });
      expect(Number.isInteger(check.latency_ms)).toBe(true);
    }
  });

  it('answers 503 with the raw failure message when a check fails, and /status says down without it', async () => {
    store.status = 500;
    const ready = await api.http.get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.ok).toBe(false);
    const chroma = ready.body.checks.find((c: { name: string }) => c.name === 'chromadb');
    expect(chroma).toMatchObject({ ok: false, message: 'heartbeat answered HTTP 500' });
    // The 503 is the report as JSON, as openapi.json says (a monitor typed from the client reads `checks`).
    expect(ready.headers['content-type']).toMatch(/^application\/json/);
    const documented = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', '..', 'openapi.json'), 'utf8'),
    ) as OpenApiDocument;
    const schema = responseSchema(documented, 'get', '/health/ready', 503);
    expect(schema).toEqual({ $ref: '#/components/schemas/ReadinessReportDto' });
    expect([
      ...undocumentedProperties(documented, schema!, ready.body),
      ...missingProperties(documented, schema!, ready.body),
    ]).toEqual([]);

    const status = await api.http.get('/status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      project: 'subscription-service',
      overall: 'down',
      components: [
        { name: 'database', status: 'operational' },
        { name: 'redis', status: 'operational' },
        { name: 'chromadb', status: 'down' },
      ],
    });
    expect(JSON.stringify(status.body)).not.toMatch(/HTTP 500|heartbeat/);
  });

  it('reports a slow component as degraded (over 500 ms) while readiness stays ok', async () => {
    store.delayMs = 700;
    const status = await api.http.get('/status');
    expect(status.body.overall).toBe('degraded');
    expect(status.body.components[2]).toEqual({ name: 'chromadb', status: 'degraded' });
    const ready = await api.http.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.checks[2].latency_ms).toBeGreaterThanOrEqual(650);
  });

  it('rates down above degraded: one component down and another degraded is down overall', async () => {
    const broken = await env.startApi({
      config: env.configWith({
        VECTOR_STORE_URL: store.url,
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/x',
      }),
    });
    store.delayMs = 700;
    const status = await broken.http.get('/status');
    expect(status.body.components).toEqual([
      { name: 'database', status: 'down' },
      { name: 'redis', status: 'operational' },
      { name: 'chromadb', status: 'degraded' },
    ]);
    expect(status.body.overall).toBe('down');
  });

  it('lets the degraded threshold be set per component', async () => {
    const relaxed = await env.startApi({
      config: env.configWith({ VECTOR_STORE_URL: store.url, STATUS_DEGRADED_MS_CHROMADB: '2000' }),
    });
    store.delayMs = 700;
    const status = await relaxed.http.get('/status');
    expect(status.body.overall).toBe('operational');
  });

  it('fails a check that exceeds its timeout', async () => {
    const strict = await env.startApi({
      config: env.configWith({ VECTOR_STORE_URL: store.url, HEALTH_CHECK_TIMEOUT_MS: '200' }),
    });
    // Without the timeout the check would wait out the delay and pass: the message is the proof, no clock.
    store.delayMs = 5000;
    const ready = await strict.http.get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks[2]).toMatchObject({ ok: false, message: 'timeout of 200ms exceeded' });
  });
});

describe('health with unreachable stores', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi({
      config: env.configWith({
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/nowhere',
        REDIS_URL: 'redis://127.0.0.1:1',
      }),
    });
  });
  afterAll(() => env.close());

  it('keeps /health at 200, fails readiness naming each store with the raw error, shows down on /status', async () => {
    expect((await api.http.get('/health')).status).toBe(200);
    const ready = await api.http.get('/health/ready');
    expect(ready.status).toBe(503);
    const [database, redis, chroma] = ready.body.checks;
    expect(database).toMatchObject({
      name: 'database',
      ok: false,
      message: expect.stringMatching(/ECONNREFUSED/),
    });
    expect(redis).toMatchObject({ name: 'redis', ok: false });
    expect(redis.message.length).toBeGreaterThan(0);
    // Not configured in development/test counts as healthy.
    expect(chroma).toMatchObject({ name: 'chromadb', ok: true, message: 'not configured' });
    const status = await api.http.get('/status');
    expect(status.status).toBe(200);
    expect(status.body.overall).toBe('down');
    expect(status.body.components).toEqual([
      { name: 'database', status: 'down' },
      { name: 'redis', status: 'down' },
      { name: 'chromadb', status: 'operational' },
    ]);
  });
});

describe('vector store not configured in development', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create({ env: { APP_ENV: 'development' } });
    api = await env.startApi();
  });
  afterAll(() => env.close());

  it('is ready with "not configured" and shows chromadb operational on /status', async () => {
    expect(api.config.vectorStoreUrl).toBeNull();
    const ready = await api.http.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.checks[2]).toEqual({
      name: 'chromadb',
      ok: true,
      message: 'not configured',
      latency_ms: expect.any(Number),
    });
    const status = await api.http.get('/status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      overall: 'operational',
      components: [
        { name: 'database', status: 'operational' },
        { name: 'redis', status: 'operational' },
        { name: 'chromadb', status: 'operational' },
      ],
    });
  });
});

describe('vector store not configured when deployed', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi({ config: env.configWith({ APP_ENV: 'production' }) });
  });
  afterAll(() => env.close());

  it('is a failing check', async () => {
    const ready = await api.http.get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks[2]).toMatchObject({ ok: false, message: 'VECTOR_STORE_URL is not configured' });
  });
});
