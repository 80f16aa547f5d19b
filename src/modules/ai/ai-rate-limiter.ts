import { Injectable } from '@nestjs/common';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppConfig } from '../../config/app-config.js';
import { DependencyError, ForbiddenError, RateLimitedError } from '../../common/errors/app-error.js';
import { RedisService } from '../../infra/redis/redis.service.js';
import type { User } from '../../generated/prisma/client.js';
import { tierLimits } from './ai-pricing.js';

interface Window {
  name: 'minute' | 'day';
  seconds: number;
  points: number;
}

export type RateLimitHeaders = Record<string, string>;

/**
 * Per-user limits of the metered endpoint from the tier configuration (aiRequestsPerMinute and
 * aiRequestsPerDay), counted in Redis so every API replica shares them. Answers the IETF RateLimit
 * headers for the window closest to exhaustion. When Redis is unreachable the request is refused with
 * 503: failing open would make the paid provider unlimited.
 */
@Injectable()
export class AiRateLimiter {
  private readonly limiters = new Map<string, RateLimiterRedis>();

  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisService,
  ) {}

  /** Counts one request; throws 429 (with Retry-After) when a window is used up. */
  async consume(user: User): Promise<RateLimitHeaders> {
    const limits = tierLimits(this.config.project, user.currentTier);
    const windows: Window[] = [
      { name: 'minute', seconds: 60, points: limits.aiRequestsPerMinute },
      { name: 'day', seconds: 86_400, points: limits.aiRequestsPerDay },
    ];
    if (windows.some((w) => w.points <= 0)) {
      throw new ForbiddenError('Your plan does not include language-model requests.', 'ai_not_in_plan');
    }
    const policy = windows.map((w) => `${w.points};w=${w.seconds}`).join(', ');
    let closest: { window: Window; res: RateLimiterRes } | null = null;
    // The minute window first: a burst refused there does not use up the day's quota.
    for (const window of windows) {
      const res = await this.consumeWindow(user, window, policy);
      if (
        !closest ||
        res.remainingPoints / window.points < closest.res.remainingPoints / closest.window.points
      ) {
        closest = { window, res };
      }
    }
    return { ...headers(closest!.window, closest!.res), 'RateLimit-Policy': policy };
  }

  private async consumeWindow(user: User, window: Window, policy: string): Promise<RateLimiterRes> {
    try {
      return await this.limiter(user.currentTier, window).consume(user.id);
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        throw new RateLimitedError(
          err.msBeforeNext / 1000,
          `The ${window.name} limit of ${window.points} language-model requests is used up.`,
          { ...headers(window, err), 'RateLimit-Policy': policy },
        );
      }
      throw new DependencyError(
        'The rate limiter is unavailable. Try again shortly.',
        'rate_limiter_unavailable',
        err,
      );
    }
  }

  private limiter(tier: string, window: Window): RateLimiterRedis {
    const id = `${tier}:${window.name}:${window.points}`;
    let limiter = this.limiters.get(id);
    if (!limiter) {
      limiter = new RateLimiterRedis({
        storeClient: this.redis.client,
        // The tier and size are in the key: a plan change starts a fresh window instead of inheriting one.
        keyPrefix: this.redis.key('ratelimit', 'ai', window.name, tier, String(window.points)),
        points: window.points,
        duration: window.seconds,
      });
      this.limiters.set(id, limiter);
    }
    return limiter;
  }
}

function headers(window: Window, res: RateLimiterRes): RateLimitHeaders {
  return {
    'RateLimit-Limit': String(window.points),
    'RateLimit-Remaining': String(Math.max(0, res.remainingPoints)),
    'RateLimit-Reset': String(Math.max(0, Math.ceil(res.msBeforeNext / 1000))),
  };
}
