/**
 * The served API description is the committed one, and paths nobody serves answer problem+json like
 * every other error, outside /api/v1 too (next to the docs, the probes and the webhook receivers).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const committed = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'openapi.json'), 'utf8'));

describe('API docs and unknown paths', () => {
  let env: TestEnv;
  let api: ApiApp;

  // A different project slug and origin list: nothing of the configuration leaks into the document.
  beforeAll(async () => {
    env = await TestEnv.create({
      env: { PROJECT_SLUG: 'other-slug', CORS_ORIGINS: 'https://app.example.com' },
    });
    api = await env.startApi();
  });
  afterAll(() => env.close());

  it('serves openapi.json at /docs-json and /docs/openapi.json', async () => {
    for (const path of ['/docs-json', '/docs/openapi.json']) {
      const res = await api.http.get(path);
      expect({ path, status: res.status, type: res.type }).toEqual({
        path,
        status: 200,
        type: 'application/json',
      });
      expect(res.body).toEqual(committed);
    }
    const page = await api.http.get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('swagger');
  });

  it.each([
    ['get', '/nope'],
    ['get', '/docs/nope.json'],
    ['get', '/docs-json/extra'],
    ['get', '/health/nope'],
    ['post', '/webhooks/unknown'],
    ['get', '/webhooks/billing'],
    ['delete', '/status'],
    ['get', '/api/v2/me'],
    ['get', '/api/v1/nope'],
  ])('%s %s answers 404 problem+json', async (method, path) => {
    const res = await (
      api.http as unknown as Record<string, (p: string) => Promise<import('supertest').Response>>
    )[method](path);
    expect({ path, status: res.status, type: res.type }).toEqual({
      path,
      status: 404,
      type: 'application/problem+json',
    });
    const problem = JSON.parse(res.text);
    expect(problem).toMatchObject({ status: 404, code: 'not_found', type: 'urn:problem:not_found' });
    expect(problem.request_id).toBe(res.headers['x-request-id']);
  });
});
