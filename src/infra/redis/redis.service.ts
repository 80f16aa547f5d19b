import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';

/**
 * Reconnect delay after the n-th failed attempt: at most 2 s, so work resumes within seconds of Redis
 * returning (BullMQ's own default backs off exponentially to 20 s).
 */
export const reconnectDelay = (times: number): number => Math.min(times * 200, 2000);

/**
 * Options for every Redis connection we open. TLS (`rediss://`) verifies certificates by default in
 * ioredis; we never turn that off.
 */
export function redisOptions(config: AppConfig, overrides: RedisOptions = {}): RedisOptions {
  return {
    connectTimeout: 3000,
    // While Redis is down a command waits for at most one reconnect attempt and never longer than
    // commandTimeout, so callers fail within seconds (503) instead of hanging. The offline queue stays on:
    // BullMQ sends commands before the connection is ready.
    maxRetriesPerRequest: 1,
    commandTimeout: 2000,
    retryStrategy: reconnectDelay,
    ...overrides,
  };
}

export function createRedis(config: AppConfig, overrides: RedisOptions = {}): Redis {
  return new Redis(config.redis.url, redisOptions(config, overrides));
}

/** The shared Redis connection for rate limits, ceilings and small shared state (not BullMQ). */
@Injectable()
export class RedisService implements OnModuleDestroy {
  readonly client: Redis;
  private readonly logger = new Logger(RedisService.name);

  constructor(private readonly config: AppConfig) {
    this.client = createRedis(config);
    this.client.on('error', (err: Error) =>
      this.logger.debug({ err: err.message }, 'redis connection error'),
    );
  }

  /** Prefix for keys we own, so several deployments (or test runs) can share one Redis. */
  key(...parts: string[]): string {
    return [this.config.redis.keyPrefix, ...parts].join(':');
  }

  async onModuleDestroy(): Promise<void> {
    this.client.disconnect();
  }
}
