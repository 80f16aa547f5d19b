import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ProbeModule } from '../support/probe.module.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

interface LogLine {
  level: number;
  context?: string;
  msg?: string;
  err?: { stack?: string; message?: string };
  res?: { status?: number };
}

/** Issue 20 item 5: readable logs. One stack trace per failure; Nest's bootstrap lines at debug. */
describe('service logs', () => {
  let env: TestEnv;
  let api: ApiApp;
  const lines = () => env.logs.lines.map((line) => JSON.parse(line) as LogLine);

  beforeAll(async () => {
    env = await TestEnv.create({ logLevel: 'debug', env: { TESTING: '1' } });
    api = await env.startApi({ modules: [ProbeModule] });
  });

  afterAll(async () => {
    await env?.close();
  });

  it('logs a failed request with one stack trace, the real one, and one request line without a stack', async () => {
    const before = env.logs.lines.length;
    await api.http.get('/api/v1/probe/boom').set('Authorization', 'Bearer test:user_logs').expect(500);
    const written = lines().slice(before);
    const stacks = written.filter((line) => line.err?.stack);
    expect(stacks).toHaveLength(1);
    expect(stacks[0].err!.stack).toContain('probe.module');
    const requestLine = written.find((line) => line.res?.status === 500);
    expect(requestLine).toBeDefined();
    expect(requestLine!.err).toBeUndefined();
  });

  it("writes Nest's bootstrap chatter at debug, not info", () => {
    const bootstrap = lines().filter((line) =>
      ['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication', 'NestFactory'].includes(
        line.context ?? '',
      ),
    );
    expect(bootstrap.length).toBeGreaterThan(5);
    expect([...new Set(bootstrap.map((line) => line.level))]).toEqual([20]);
  });
});
