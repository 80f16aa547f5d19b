import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { AppConfig } from '../../config/app-config.js';
import { loadConfig } from '../../config/env.js';
import type { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { RedisService } from '../../infra/redis/redis.service.js';
import { HealthProbes } from './health.probes.js';

const PROBE_DELAY_MS = 200;
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Three slow probes that log when they start and when they finish. */
function slowProbes(config: AppConfig) {
  const events: string[] = [];
  const slow = async (name: string) => {
    events.push(`start ${name}`);
    await delay(PROBE_DELAY_MS);
    events.push(`end ${name}`);
  };
  const prisma = { pool: { query: () => slow('database') } } as unknown as PrismaService;
  const redis = { client: { ping: () => slow('redis') } } as unknown as RedisService;
  jest.spyOn(globalThis, 'fetch').mockImplementation(async () => {
    await slow('chromadb');
    return new Response('{"nanosecond heartbeat":1}', { status: 200 });
  });
  return { events, probes: new HealthProbes(new HealthIndicatorService(), config, prisma, redis) };
}

describe('HealthProbes.runAll', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('runs the three probes in parallel: every probe starts before any finishes', async () => {
    const { events, probes } = slowProbes(
      loadConfig({ APP_ENV: 'test', VECTOR_STORE_URL: 'http://chroma.test:8000' }),
    );
    const checks = await probes.runAll();
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ['database', true],
      ['redis', true],
      ['chromadb', true],
    ]);
    // Order, not elapsed time: run one after the other, each would end before the next starts.
    expect(events.slice(0, 3).sort()).toEqual(['start chromadb', 'start database', 'start redis']);
    expect(events.slice(3).sort()).toEqual(['end chromadb', 'end database', 'end redis']);
  });

  it('fails each probe that exceeds HEALTH_CHECK_TIMEOUT_MS, with the timeout message', async () => {
    const { probes } = slowProbes(
      loadConfig({
        APP_ENV: 'test',
        VECTOR_STORE_URL: 'http://chroma.test:8000',
        HEALTH_CHECK_TIMEOUT_MS: '50',
      }),
    );
    const checks = await probes.runAll();
    expect(checks).toEqual([
      { name: 'database', ok: false, message: 'timeout of 50ms exceeded', latency_ms: expect.any(Number) },
      { name: 'redis', ok: false, message: 'timeout of 50ms exceeded', latency_ms: expect.any(Number) },
      { name: 'chromadb', ok: false, message: 'timeout of 50ms exceeded', latency_ms: expect.any(Number) },
    ]);
  });

  it('reports an unconfigured vector store as ok outside deployments, failing when deployed', async () => {
    const local = await slowProbes(loadConfig({ APP_ENV: 'development' })).probes.runAll();
    expect(local[2]).toEqual({
      name: 'chromadb',
      ok: true,
      message: 'not configured',
      latency_ms: expect.any(Number),
    });
    const deployed = await slowProbes(loadConfig({ APP_ENV: 'production' })).probes.runAll();
    expect(deployed[2]).toMatchObject({
      name: 'chromadb',
      ok: false,
      message: 'VECTOR_STORE_URL is not configured',
    });
  });
});
