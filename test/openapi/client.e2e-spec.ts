/**
 * A frontend's user flow through the typed client (clients/typescript) against the running service on a
 * real port: me, saved searches CRUD, checkout, a metered completion (the language model is the local
 * OpenAI-compatible fake) with an Idempotency-Key and the rate-limit headers, and typed problems.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  type ApiClient,
  createApiClient,
  isProblem,
  isReplayed,
  newIdempotencyKey,
  readRateLimit,
} from '../../clients/typescript/src/index.js';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { FakeLlmServer } from '../fakes/llm-server.js';
import {
  missingProperties,
  type OpenApiDocument,
  responseSchema,
  undocumentedProperties,
} from '../security/support/openapi.js';
import { grantCredits } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the typed client against the running service', () => {
  let env: TestEnv;
  let api: ApiApp;
  let llm: FakeLlmServer;
  let baseUrl: string;
  let client: ApiClient;

  beforeAll(async () => {
    llm = await FakeLlmServer.start();
    env = await TestEnv.create({
      env: { LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: 'sk-test-llm', LLM_MODEL: 'fake-1' },
    });
    api = await env.startApi();
    await api.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(api.app.getHttpServer().address() as AddressInfo).port}`;
    const token = await api.token('user_client_flow', 'frontend@example.com');
    client = createApiClient({ baseUrl, token: () => token });
  });
  afterAll(async () => {
    await env.close();
    await llm.close();
  });

  it('reads the current user (created on first use)', async () => {
    const { data, error, response } = await client.GET('/api/v1/me');
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ email: 'frontend@example.com', current_tier: 'FREE', credit_balance: 0 });
  });

  it('creates, lists, reads, updates and deletes a saved search', async () => {
    const created = await client.POST('/api/v1/saved_searches', {
      body: { name: 'Berlin', query: 'backend', filters: { remote: true } },
    });
    expect(created.response.status).toBe(201);
    const id = created.data!.id;
    expect(created.data).toMatchObject({ name: 'Berlin', query: 'backend', filters: { remote: true } });

    const list = await client.GET('/api/v1/saved_searches', {
      params: { query: { page: 1, page_size: 10 } },
    });
    expect(list.data).toMatchObject({ total: 1, page: 1, page_size: 10, items: [{ id }] });

    const path = { params: { path: { id } } };
    expect((await client.GET('/api/v1/saved_searches/{id}', path)).data?.name).toBe('Berlin');
    const updated = await client.PATCH('/api/v1/saved_searches/{id}', { ...path, body: { name: 'Hamburg' } });
    expect(updated.data).toMatchObject({ id, name: 'Hamburg', query: 'backend' });

    const removed = await client.DELETE('/api/v1/saved_searches/{id}', path);
    expect(removed.response.status).toBe(204);
    const gone = await client.GET('/api/v1/saved_searches/{id}', path);
    expect(gone.response.status).toBe(404);
    expect(gone.error?.code).toBe('not_found');
  });

  it('gets a checkout token and what the checkout overlay needs', async () => {
    const token = await client.POST('/api/v1/billing/checkout-token', { body: { tier: 'PRO' } });
    expect(token.error).toBeUndefined();
    expect(token.data!.token.length).toBeGreaterThan(20);
    expect(Date.parse(token.data!.expires_at)).toBeGreaterThan(Date.now());

    const checkout = await client.POST('/api/v1/billing/checkout', { body: { tier: 'PRO' } });
    expect(checkout.data).toMatchObject({
      customer_email: 'frontend@example.com',
      custom_data: { checkout_token: expect.any(String) },
    });
    expect(checkout.data!.price_id).toBe(
      Object.entries(api.config.project.priceTiers).find(([, tier]) => tier === 'PRO')![0],
    );
  });

  it('runs a completion once per Idempotency-Key, with the rate-limit headers', async () => {
    const me = (await client.GET('/api/v1/me')).data!;
    await grantCredits(api, me.id, 10);
    llm.behaviour = {
      kind: 'ok',
      content: 'Hello from the fake model',
      usage: { prompt_tokens: 12, completion_tokens: 8 },
    };
    const key = newIdempotencyKey();
    const ask = () =>
      client.POST('/api/v1/ai/completions', {
        params: { header: { 'Idempotency-Key': key } },
        body: { messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 64 },
      });

    const first = await ask();
    expect(first.error).toBeUndefined();
    expect(first.data).toMatchObject({
      content: 'Hello from the fake model',
      refusal: null,
      credits_charged: 1,
    });
    const limit = readRateLimit(first.response);
    expect(limit).toMatchObject({ limit: 5, remaining: 4, retryAfterSeconds: null });
    expect(limit!.policy).toContain('w=60');
    expect(isReplayed(first.response)).toBe(false);

    const retry = await ask();
    expect(retry.data).toEqual(first.data);
    expect(isReplayed(retry.response)).toBe(true);
    expect(llm.requests).toHaveLength(1);
    expect((await client.GET('/api/v1/credits')).data!.balance).toBe(9);
  });

  it('reads the export as the documented JSON, then deletes and restores the account', async () => {
    const leaving = createApiClient({
      baseUrl,
      token: () => api.token('user_client_leaving', 'leaving@example.com'),
    });
    await leaving.POST('/api/v1/saved_searches', { body: { name: 'Berlin', query: 'backend' } });

    const exported = await leaving.GET('/api/v1/account/me/export');
    expect(exported.error).toBeUndefined();
    expect(exported.response.headers.get('content-disposition')).toMatch(/^attachment; /);
    const documented = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')) as {
      paths: Record<string, { get: { responses: Record<string, { content?: Record<string, unknown> }> } }>;
    };
    const media = documented.paths['/api/v1/account/me/export']!.get.responses['200']!.content?.[
      'application/json'
    ] as { schema: { required: string[] } } | undefined;
    expect(Object.keys(exported.data!)).toEqual(media?.schema.required);
    expect(exported.data!.user).toMatchObject({ email: 'leaving@example.com' });
    expect(exported.data!.saved_searches).toHaveLength(1);
    expect(exported.data!.credits).toEqual({
      balance: 0,
      plan_remaining: 0,
      purchased_remaining: 0,
      plan_expires_at: null,
    });

    const deleted = await leaving.DELETE('/api/v1/account/me');
    expect(deleted.response.status).toBe(202);
    expect(Date.parse(deleted.data!.hard_delete_after)).toBeGreaterThan(Date.now());
    expect((await leaving.GET('/api/v1/me')).data?.deleted_at).toBe(deleted.data!.deleted_at);
    const refused = await leaving.GET('/api/v1/saved_searches');
    expect(refused.response.status).toBe(403);
    expect(refused.error?.code).toBe('account_deleted');

    const restored = await leaving.POST('/api/v1/account/me/restore');
    expect(restored.data).toMatchObject({ deleted_at: null, hard_delete_after: null });
    expect((await leaving.GET('/api/v1/saved_searches')).data?.total).toBe(1);
  });

  it('types the problem documents: validation errors[], 401 and 402', async () => {
    const invalid = await client.POST('/api/v1/saved_searches', { body: { name: ' ', query: 'x' } });
    expect(invalid.response.status).toBe(400);
    expect(invalid.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(isProblem(invalid.error)).toBe(true);
    expect(invalid.error).toMatchObject({
      type: 'urn:problem:validation_failed',
      status: 400,
      code: 'validation_failed',
      request_id: invalid.response.headers.get('x-request-id'),
    });
    expect(invalid.error!.errors!.map((e) => e.field)).toContain('name');

    const anonymous = createApiClient({ baseUrl });
    const signedOut = await anonymous.GET('/api/v1/me');
    expect(signedOut.response.status).toBe(401);
    expect(signedOut.error?.code).toBe('unauthenticated');

    const poor = createApiClient({ baseUrl, token: () => api.token('user_client_poor', 'poor@example.com') });
    const unpaid = await poor.POST('/api/v1/ai/completions', {
      body: { messages: [{ role: 'user', content: 'Say hello.' }] },
    });
    expect(unpaid.response.status).toBe(402);
    expect(unpaid.error).toMatchObject({ code: 'insufficient_credits', balance: 0 });
    expect(readRateLimit(unpaid.response)?.limit).toBe(5);
  });

  it('types the JSON answers of the e-mail links and the probes as the service sends them', async () => {
    const documented = JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')) as OpenApiDocument;
    const me = (await client.GET('/api/v1/me')).data!;
    const tokens = api.app.get(UnsubscribeTokens);
    // The links the e-mails carry.
    const tokenOf = (link: string) => new URL(link).searchParams.get('t')!;
    const anonymous = createApiClient({ baseUrl });
    // What a script (no Accept: text/html) gets; a browser's form gets the HTML page instead.
    const confirmed = await anonymous.POST('/api/v1/email/confirm', {
      params: { query: { t: tokenOf(tokens.confirmUrl(me.id)) } },
    });
    const unsubscribed = await anonymous.POST('/api/v1/email/unsubscribe', {
      params: { query: { t: tokenOf(tokens.url(me.id)) } },
    });
    const live = await anonymous.GET('/health');
    const ready = await anonymous.GET('/health/ready');
    const status = await anonymous.GET('/status');
    // These compile only when the client types the answers (it typed them `undefined`).
    expect({
      subscribed: confirmed.data?.subscribed,
      unsubscribed: unsubscribed.data?.unsubscribed,
      live: live.data?.status,
      ready: ready.data?.ok,
      checks: ready.data?.checks.map((check) => check.name),
      overall: status.data?.overall,
    }).toEqual({
      subscribed: true,
      unsubscribed: true,
      live: 'ok',
      ready: true,
      checks: ['database', 'redis', 'chromadb'],
      overall: expect.any(String),
    });

    const answers = {
      'post /api/v1/email/confirm': confirmed,
      'post /api/v1/email/unsubscribe': unsubscribed,
      'get /health': live,
      'get /health/ready': ready,
      'get /status': status,
    };
    const mismatches = Object.entries(answers).flatMap(([key, { response, data }]) => {
      const [method, path] = key.split(' ');
      expect({ key, status: response.status, type: response.headers.get('content-type') }).toEqual({
        key,
        status: 200,
        type: expect.stringMatching(/^application\/json/),
      });
      const schema = responseSchema(documented, method, path, response.status);
      if (!schema) return [`${key}: no JSON schema documented for ${response.status}`];
      return [
        ...undocumentedProperties(documented, schema, data),
        ...missingProperties(documented, schema, data),
      ].map((property) => `${key}: ${property}`);
    });
    expect(mismatches).toEqual([]);
  });
});
