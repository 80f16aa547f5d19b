import { Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { AppConfig } from '../../../config/app-config.js';
import { RedisService } from '../../../infra/redis/redis.service.js';

/**
 * GCRA ("virtual scheduling"): the key holds the theoretical arrival time (TAT) of the next request.
 * Each call reserves the next slot and returns how long the caller must wait for it. Redis TIME is the
 * one clock every worker shares. Times are milliseconds (fractional) kept as strings.
 */
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nextTat = tat + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.3f', nextTat), 'PX', math.ceil(nextTat - now) + 1000)
return string.format('%.3f', tat - now)
`;

/** Pushes the next free slot to at least now + ARGV[1] ms (the provider asked us to back off). */
const PAUSE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local untilMs = now + tonumber(ARGV[1])
if untilMs > tat then
  redis.call('SET', KEYS[1], string.format('%.3f', untilMs), 'PX', math.ceil(untilMs - now) + 1000)
end
return 1
`;

type CeilingRedis = Redis & {
  emailCeilingReserve(key: string, intervalMs: string): Promise<string>;
  emailCeilingPause(key: string, pauseMs: string): Promise<number>;
};

/** Longest pause a provider header can impose on us, so a bogus header cannot stall sending for hours. */
const MAX_PAUSE_MS = 60_000;

/**
 * Client-side ceiling on e-mail provider requests, shared by every worker through Redis
 * (EMAIL_MAX_REQUESTS_PER_SECOND, default 8.3). Over the ceiling a caller waits for its slot; nothing
 * is dropped. Written by hand rather than with rate-limiter-flexible because its limiters reject and
 * make callers poll, while a reservation gives each request an exact, fair slot in one round trip.
 */
@Injectable()
export class EmailRateCeiling {
  private readonly logger = new Logger(EmailRateCeiling.name);
  private readonly redis: CeilingRedis;
  private readonly key: string;

  constructor(
    private readonly config: AppConfig,
    redis: RedisService,
  ) {
    const client = redis.client;
    if (!('emailCeilingReserve' in client)) {
      client.defineCommand('emailCeilingReserve', { numberOfKeys: 1, lua: RESERVE });
      client.defineCommand('emailCeilingPause', { numberOfKeys: 1, lua: PAUSE });
    }
    this.redis = client as CeilingRedis;
    this.key = redis.key('email', 'provider-ceiling');
  }

  get intervalMs(): number {
    return 1000 / this.config.email.maxRequestsPerSecond;
  }

  /** Resolves when this caller may send its next request. */
  async acquire(signal?: AbortSignal): Promise<void> {
    const waitMs = Number(await this.redis.emailCeilingReserve(this.key, this.intervalMs.toFixed(3)));
    if (waitMs > 0) await delay(waitMs, undefined, { signal });
  }

  /**
   * Honours the provider's own limit headers for every worker: Retry-After on a 429, and an exhausted
   * window (`ratelimit-remaining: 0`) until `ratelimit-reset` seconds from now.
   */
  async observe(status: number, headers: Headers): Promise<void> {
    const pauseMs = providerPauseMs(status, headers);
    if (pauseMs === null || pauseMs <= 0) return;
    this.logger.warn({ status, pause_ms: pauseMs }, 'e-mail provider asked us to slow down');
    await this.redis.emailCeilingPause(this.key, String(Math.min(pauseMs, MAX_PAUSE_MS)));
  }
}

/** How long the provider's headers tell every sender to wait, or null when they do not. */
export function providerPauseMs(status: number, headers: Headers): number | null {
  const retryAfter = headers.get('retry-after');
  if (status === 429 && retryAfter) {
    const seconds = Number(retryAfter);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(retryAfter) - Date.now();
    if (Number.isFinite(ms)) return Math.max(ms, 0);
  }
  const remaining = Number(headers.get('ratelimit-remaining') ?? NaN);
  const reset = Number(headers.get('ratelimit-reset') ?? NaN);
  if (remaining <= 0 && Number.isFinite(reset) && reset > 0) return reset * 1000;
  if (status === 429) return 1000;
  return null;
}
