import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { AppConfig } from '../../config/app-config.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { RedisService } from '../../infra/redis/redis.service.js';

export type ComponentName = 'database' | 'redis' | 'chromadb';

export interface CheckResult {
  name: ComponentName;
  ok: boolean;
  /** "ok", or the raw exception text on failure. */
  message: string;
  latency_ms: number;
}

/**
 * The three dependency probes behind /health/ready and /status, run in parallel, each bounded by a
 * timeout. External providers (billing, e-mail, language model) are deliberately not probed.
 */
@Injectable()
export class HealthProbes {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly redis: RedisService,
  ) {}

  async runAll(): Promise<CheckResult[]> {
    return Promise.all([
      this.run('database', async () => {
        await this.prisma.pool.query('SELECT 1');
      }),
      this.run('redis', async () => {
        await this.redis.client.ping();
      }),
      this.run('chromadb', ({ signal }) => this.vectorStore(signal)),
    ]);
  }

  private async run(
    name: ComponentName,
    fn: (options: { signal: AbortSignal }) => Promise<void | { message: string }>,
  ): Promise<CheckResult> {
    const result = await this.indicators
      .check(name)
      .attempt(async (options) => (await fn(options)) ?? undefined)
      .withTimeout(this.config.health.checkTimeoutMs);
    const outcome = result[name] as { status: string; message?: string; responseTime?: number };
    const ok = outcome.status === 'up';
    return {
      name,
      ok,
      message: outcome.message ?? (ok ? 'ok' : 'failed'),
      latency_ms: Math.max(0, Math.round(outcome.responseTime ?? 0)),
    };
  }

  private async vectorStore(signal: AbortSignal): Promise<void | { message: string }> {
    const base = this.config.vectorStoreUrl;
    if (!base) {
      if (this.config.deployed) throw new Error('VECTOR_STORE_URL is not configured');
      return { message: 'not configured' };
    }
    const response = await fetch(`${base.replace(/\/+$/, '')}/api/v2/heartbeat`, {
      signal,
      redirect: 'error',
    });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`heartbeat answered HTTP ${response.status}`);
  }
}
