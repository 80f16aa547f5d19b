import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppConfig } from '../../src/config/app-config.js';
import { BadGatewayError, DependencyError } from '../../src/common/errors/app-error.js';
import { BillingApiClient } from '../../src/modules/billing/billing-api.client.js';
import { HttpClient } from '../../src/infra/http/http-client.js';

type Mode = 'stall' | 'reset' | 'huge';

/**
 * Every user of the client (language model, billing, e-mail, key set) shares these rules: a body that
 * stalls or is cut off after the headers is a network failure like one before them, retried up to
 * maxAttempts and then DependencyError 503 `upstream_unreachable`; never a raw TimeoutError/TypeError.
 */
describe('HttpClient: failures while reading the response body', () => {
  let server: Server;
  let base = '';
  let mode: Mode = 'stall';
  let hits = 0;

  const answer = (res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (mode === 'huge') return res.end(JSON.stringify({ data: 'x'.repeat(4096) }));
    res.write('{"data":{"id":');
    if (mode === 'reset') setTimeout(() => res.destroy(), 20);
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hits += 1;
        answer(res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const config = { http: { timeoutMs: 200, maxAttempts: 3 } } as AppConfig;
  const client = () => Object.assign(new HttpClient(config), { backoffBaseMs: 1 });

  async function failure(promise: Promise<unknown>): Promise<unknown> {
    return promise.then(
      () => {
        throw new Error('expected a failure');
      },
      (err: unknown) => err,
    );
  }

  it.each(['stall', 'reset'] as const)(
    'retries a body that %ss and then reports the provider unreachable (503)',
    async (m) => {
      mode = m;
      hits = 0;
      const err = await failure(client().request({ method: 'GET', url: `${base}/x`, provider: 'test' }));
      expect(err).toBeInstanceOf(DependencyError);
      expect(err).toMatchObject({ status: 503, code: 'upstream_unreachable' });
      expect(hits).toBe(3);
    },
    // The deadline covers the body: without it a stalled body would hang until this test's timeout.
    10_000,
  );

  it('does not retry a body over the size limit (502, one attempt)', async () => {
    mode = 'huge';
    hits = 0;
    const err = await failure(
      client().request({ method: 'GET', url: `${base}/x`, provider: 'test', maxResponseBytes: 1024 }),
    );
    expect(err).toBeInstanceOf(BadGatewayError);
    expect(err).toMatchObject({ status: 502, code: 'upstream_response_too_large' });
    expect(hits).toBe(1);
  });

  it('stops without retrying when the caller cancels while the body is read', async () => {
    mode = 'stall';
    hits = 0;
    const controller = new AbortController();
    const pending = failure(
      client().request({
        method: 'GET',
        url: `${base}/x`,
        provider: 'test',
        timeoutMs: 10_000,
        signal: controller.signal,
      }),
    );
    while (hits < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort(new Error('shutting down'));
    expect(await pending).toMatchObject({ message: 'shutting down' });
    expect(hits).toBe(1);
  });

  it('gives the billing client its 503 billing_unavailable, not a raw error (500)', async () => {
    mode = 'reset';
    hits = 0;
    const billingConfig = {
      ...config,
      billing: { apiUrl: base, apiKey: 'key' },
    } as unknown as AppConfig;
    const billing = new BillingApiClient(client(), billingConfig);
    const err = await failure(billing.get('sub_1'));
    expect(err).toMatchObject({ status: 503, code: 'billing_unavailable' });
    expect(hits).toBe(3);
  });
});
