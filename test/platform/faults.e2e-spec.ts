import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { ProbeModule } from '../support/probe.module.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('fault injection: the database goes away and comes back', () => {
  let env: TestEnv;
  let proxy: TcpProxy;
  let api: ApiApp;
  let authorization: string;

  beforeAll(async () => {
    env = await TestEnv.create();
    proxy = await TcpProxy.start(env.config.database.url);
    env.onClose(() => proxy.close());
    api = await env.startApi({
      modules: [ProbeModule],
      config: env.configWith({ DATABASE_URL: proxy.rewrite(env.config.database.url) }),
    });
    authorization = `Bearer ${await env.idp.token({ sub: 'user_fault', email: 'fault@example.com' }, { expiresIn: 600 })}`;
    expect((await api.http.get('/api/v1/probe/whoami').set('Authorization', authorization)).status).toBe(200);
  });
  afterAll(() => env.close());

  it('keeps liveness, fails readiness naming the database, shows it down, answers API routes with 503', async () => {
    proxy.cut();
    expect((await api.http.get('/health')).status).toBe(200);

    const ready = await api.http.get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks[0]).toMatchObject({ name: 'database', ok: false });
    expect(ready.body.checks[0].message.length).toBeGreaterThan(0);
    expect(ready.body.checks[1]).toMatchObject({ name: 'redis', ok: true });

    const status = await api.http.get('/status');
    expect(status.status).toBe(200);
    expect(status.body.components[0]).toEqual({ name: 'database', status: 'down' });

    const res = await api.http.get('/api/v1/probe/whoami').set('Authorization', authorization);
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 503, code: 'dependency_unavailable' });
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('recovers without a restart when the database returns', async () => {
    proxy.restore();
    await waitFor(async () => (await api.http.get('/health/ready')).status === 200, 10_000, 100);
    const res = await api.http.get('/api/v1/probe/whoami').set('Authorization', authorization);
    expect(res.status).toBe(200);
  });
});
