import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DeployedWorld } from '../support/deployed.js';
import { freePort, type RunningProcess, startCompiled, waitForHttp } from '../support/processes.js';
import { TestEnv } from '../support/test-env.js';

/** The compiled processes, started for real: boot refusals, readiness, graceful shutdown. */
describe('API and worker processes', () => {
  let env: TestEnv;
  let world: DeployedWorld;
  let deployed: Record<string, string>;
  const running: RunningProcess[] = [];

  beforeAll(async () => {
    env = await TestEnv.create();
    world = await DeployedWorld.start(env);
    deployed = world.vars;
  });

  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await world.close();
    await env.close();
  });

  const start = (entry: 'main' | 'worker', extra: Record<string, string>) => {
    const p = startCompiled(entry, { ...deployed, ...extra });
    running.push(p);
    return p;
  };

  const refusal = async (extra: Record<string, string>) => {
    const p = start('main', { PORT: String(await freePort()), ...extra });
    const code = await p.exited;
    return { code, lines: p.stderr().trim().split('\n') };
  };

  it.each([
    [
      'project_config',
      { COMPANY_LEGAL_NAME: 'TBD', EMAIL_UNSUBSCRIBE_SECRET: 'short', CORS_ORIGINS: 'http://localhost' },
    ],
    ['secrets', { EMAIL_UNSUBSCRIBE_SECRET: 'short', CORS_ORIGINS: 'http://localhost' }],
    ['secrets', { TESTING: '1' }],
    [
      'cors_origins',
      {
        CORS_ORIGINS: 'https://app.example.com,http://127.0.0.1:5173',
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/x',
      },
    ],
    ['database', { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/x', REDIS_URL: 'redis://127.0.0.1:1' }],
    ['redis', { REDIS_URL: 'redis://127.0.0.1:1', PUBLIC_BASE_URL: '' }],
    ['public_base_url', { PUBLIC_BASE_URL: '' }],
    ['public_base_url', { PUBLIC_BASE_URL: 'http://api.example.com' }],
  ])('refuses to boot on %s, in spec order, with one line', async (check, extra) => {
    const { code, lines } = await refusal(extra);
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^boot refused \\[${check}\\]: `));
  });

  it('refuses an invalid variable with one line naming it', async () => {
    const { code, lines } = await refusal({ HTTP_TIMEOUT_MS: 'soon' });
    expect(code).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^boot refused \[configuration\]: HTTP_TIMEOUT_MS: /)]);
  });

  it('boots deployed, becomes ready, and finishes in-flight requests on SIGTERM', async () => {
    const port = await freePort();
    const api = start('main', { PORT: String(port) });
    await waitForHttp(`http://127.0.0.1:${port}/health`);
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
    expect(ready.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/docs`)).status).toBe(404);

    world.store.delayMs = 800;
    const inFlight = fetch(`http://127.0.0.1:${port}/health/ready`);
    await new Promise((resolve) => setTimeout(resolve, 150));
    api.child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { ok: boolean }).ok).toBe(true);
    expect(await api.exited).toBe(0);
    world.store.delayMs = 0;
  });

  it('keeps serving after a validly signed token whose payload is null (jsonwebtoken threw, the process exited)', async () => {
    const port = await freePort();
    const api = start('main', { PORT: String(port) });
    await waitForHttp(`http://127.0.0.1:${port}/health`);
    for (const payload of ['null', '5', '[]']) {
      const token = await env.idp.tokenWithPayload(payload);
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/me`, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.timeout(5_000),
      });
      expect({ payload, status: res.status, type: res.headers.get('content-type') }).toEqual({
        payload,
        status: 401,
        type: 'application/problem+json; charset=utf-8',
      });
      expect(await res.json()).toMatchObject({ code: 'invalid_token' });
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${port}/status`)).status).toBe(200);
    api.child.kill('SIGTERM');
    expect(await api.exited).toBe(0);
    expect(api.stderr()).not.toContain('TypeError');
  });

  it('runs the worker with only its own /health on WORKER_PORT, and stops on SIGTERM', async () => {
    const workerPort = await freePort();
    const worker = start('worker', { WORKER_PORT: String(workerPort) });
    await waitForHttp(`http://127.0.0.1:${workerPort}/health`);
    const health = await fetch(`http://127.0.0.1:${workerPort}/health`);
    expect(await health.json()).toEqual({
      status: 'ok',
      project_slug: 'subscription-service',
      environment: 'production',
    });
    // Problem documents like the API's, never echoing the path (Nest's default said "Cannot GET /...").
    for (const [path, status, code] of [
      ['/api/v1/me', 404, 'not_found'],
      ['/health/%ff', 400, 'validation_failed'],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${workerPort}${path}`);
      const text = await res.text();
      expect({ path, status: res.status, type: res.headers.get('content-type') }).toEqual({
        path,
        status,
        type: 'application/problem+json; charset=utf-8',
      });
      expect(JSON.parse(text)).toMatchObject({ status, code });
      expect(text).not.toContain(path);
    }
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  });
});
