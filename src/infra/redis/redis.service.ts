import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';

/**
 * Options for every Redis connection we open. TLS (`rediss://`) verifies certificates by default in
 * ioredis; we never turn that off.
 */
export function redisOptions(config: AppConfig, overrides: RedisOptions = {}): RedisOptions {
  return {
    connectTimeout: 3000,
    maxRetriesPerRequest: 1,
    // Commands fail at once while disconnected instead of queueing: callers turn that into 503/429 paths.
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    ...overrides,
  };
}

export function createRedis(config: AppConfig, overrides: RedisOptions = {}): Redis {
  return new Redis(config.redis.url, redisOptions(config, overrides));
}

/** The shared Redis connection for rate limits, ceilings and small shared state (not BullMQ). */
@Injectable()
export class RedisService implements OnModuleInit, OnModuleDestroy {
  readonly client: Redis;
  private readonly logger = new Logger(RedisService.name);

  constructor(private readonly config: AppConfig) {
    this.client = createRedis(config, { lazyConnect: true });
    this.client.on('error', (err: Error) => this.logger.debug({ err: err.message }, 'redis connection error'));
  }

  /** Prefix for keys we own, so several deployments (or test runs) can share one Redis. */
  key(...parts: string[]): string {
    return [this.config.redis.keyPrefix, ...parts].join(':');
  }

  async onModuleInit(): Promise<void> {
    try {
      await this.client.connect();
    } catch (err) {
      // Not fatal here: deployed boots were already refused when Redis is down; locally /health/ready says so.
      this.logger.warn({ err: (err as Error).message }, 'redis is not reachable yet');
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.client.disconnect();
  }
}

