import { type CanActivate, type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppConfig } from '../../config/app-config.js';
import { RateLimitedError } from '../../common/errors/app-error.js';
import { sendProblem, toProblem } from '../../common/filters/problem-details.filter.js';
import { RedisService } from '../../infra/redis/redis.service.js';
import { API_PREFIX } from '../../common/http/api-prefix.js';
import { HELD_IP_BLOCK, isSignedLinkRoute } from '../../common/http/signed-link-routes.js';
import type { Principal } from '../../common/principal.js';

const MAX_BLOCKED_IPS = 10_000;
const LIMITER_TIMEOUT_MS = 300;
const WRITES = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/** Probes and the providers' webhook traffic are never limited here (DESIGN 5c). */
export function isRateLimitExempt(path: string): boolean {
  return (
    path === '/health' || path === '/health/ready' || path === '/status' || path.startsWith('/webhooks/')
  );
}

type Outcome = { ok: true } | { ok: false; error: RateLimitedError };

/**
 * The general request limits (issue 14 item 2), counted in Redis like the AI limit so every replica
 * shares them: per user for authenticated writes, per client IP for unauthenticated requests (public
 * routes, and every request answered 401), per user a valid e-mail link names (EmailLinkLimitGuard).
 * Unlike the AI limit it fails open: a Redis outage must not refuse every write (the outbox keeps writes
 * working without Redis); it is logged.
 */
@Injectable()
export class RequestRateLimiter {
  private readonly logger = new Logger(RequestRateLimiter.name);
  private readonly user: RateLimiterRedis | null;
  /** DESIGN.md: 120 writes a minute, in bursts of at most 30 (the minute's rate refills a burst). */
  private readonly userBurst: RateLimiterRedis | null;
  private readonly ip: RateLimiterRedis | null;
  private readonly adminAudit: RateLimiterRedis | null;
  /** Per user a valid e-mail link names: a leaked link's replay (the per-IP limit serves valid tokens). */
  private readonly emailLink: RateLimiterRedis | null;
  /** IPs over their limit, learned from a 401: refused before authentication until the window ends. */
  private readonly blockedIps = new Map<string, number>();

  constructor(config: AppConfig, redis: RedisService) {
    const {
      userWritesPerMinute,
      userWritesBurst,
      ipPerMinute,
      adminUnauthorizedAuditPerHour,
      emailLinksPerUser,
      emailLinkWindowSeconds,
    } = config.limits;
    const limiter = (name: string, points: number, duration: number) =>
      points > 0
        ? new RateLimiterRedis({
            storeClient: redis.client,
            keyPrefix: redis.key('ratelimit', name, String(points)),
            points,
            duration,
          })
        : null;
    this.user = limiter('user-writes', userWritesPerMinute, 60);
    // The burst window is the time the minute's rate takes to refill a burst (30 at 120/min: 15 s).
    this.userBurst =
      userWritesPerMinute > 0 && userWritesBurst > 0 && userWritesBurst < userWritesPerMinute
        ? limiter(
            'user-writes-burst',
            userWritesBurst,
            Math.max(1, Math.ceil((userWritesBurst * 60) / userWritesPerMinute)),
          )
        : null;
    this.ip = limiter('ip', ipPerMinute, 60);
    this.adminAudit = limiter('admin-unauthorized-audit', adminUnauthorizedAuditPerHour, 3600);
    this.emailLink = limiter('email-link', emailLinksPerUser, emailLinkWindowSeconds);
  }

  async consumeUser(userId: string): Promise<Outcome> {
    const detail = 'Too many write requests for this account.';
    const burst = await this.consume(this.userBurst, userId, detail);
    if (!burst.ok) return burst;
    return this.consume(this.user, userId, detail);
  }

  async consumeIp(ip: string): Promise<Outcome> {
    const outcome = await this.consume(this.ip, ip, 'Too many unauthenticated requests from this address.');
    if (!outcome.ok) {
      // Bounded: many addresses (an IPv6 range) cannot grow it without end; the oldest block goes first.
      if (this.blockedIps.size >= MAX_BLOCKED_IPS)
        this.blockedIps.delete(this.blockedIps.keys().next().value!);
      this.blockedIps.set(ip, Date.now() + Number(outcome.error.headers['Retry-After']) * 1000);
    }
    return outcome;
  }

  /**
   * Counts one request to an e-mail link whose token is valid, for the user it names (both links, every
   * method, share the budget). Fails open like the other general limits: an unsubscribe must work while
   * Redis is down.
   */
  consumeEmailLink(userId: string): Promise<Outcome> {
    return this.consume(this.emailLink, userId, 'Too many requests with this e-mail link; try again later.');
  }

  /** The remaining block of an IP that went over its limit (on this replica), or null. */
  ipBlock(ip: string): RateLimitedError | null {
    const until = this.blockedIps.get(ip);
    if (until === undefined) return null;
    const ms = until - Date.now();
    if (ms <= 0) {
      this.blockedIps.delete(ip);
      return null;
    }
    return new RateLimitedError(ms / 1000, 'Too many unauthenticated requests from this address.');
  }

  /** Whether one more admin.unauthorized audit row for this user fits in the hour. */
  async allowAdminAudit(userId: string): Promise<boolean> {
    return (await this.consume(this.adminAudit, userId, '')).ok;
  }

  private async consume(limiter: RateLimiterRedis | null, key: string, detail: string): Promise<Outcome> {
    if (!limiter) return { ok: true };
    let timer: NodeJS.Timeout | undefined;
    try {
      // A slow or unreachable Redis must not hold every request for its command timeout (2 s).
      await Promise.race([
        limiter.consume(key),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('rate limiter timeout')), LIMITER_TIMEOUT_MS);
        }),
      ]);
      return { ok: true };
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        return {
          ok: false,
          error: new RateLimitedError(err.msBeforeNext / 1000, detail, {
            'RateLimit-Limit': String(limiter.points),
            'RateLimit-Remaining': '0',
            'RateLimit-Reset': String(Math.max(1, Math.ceil(err.msBeforeNext / 1000))),
          }),
        };
      }
      this.logger.warn({ err: (err as Error).message }, 'request rate limiter unavailable; not limiting');
      return { ok: true };
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Global guard after AuthenticationGuard: an authenticated write counts for its user, a request on a
 * public route for its IP. Requests that fail authentication never get here; requestRateLimitMiddleware
 * counts those.
 */
@Injectable()
export class RequestRateLimitGuard implements CanActivate {
  constructor(private readonly limiter: RequestRateLimiter) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest<Request & { principal?: Principal }>();
    // A signed link's token authenticates it; a refused one is counted when its answer is known.
    if (isRateLimitExempt(req.path) || isSignedLinkRoute(req.path)) return true;
    const outcome = req.principal
      ? WRITES.has(req.method)
        ? await this.limiter.consumeUser(req.principal.user.id)
        : { ok: true as const }
      : await this.limiter.consumeIp(clientIp(req));
    if (!outcome.ok) throw outcome.error;
    return true;
  }
}

export const clientIp = (req: Request): string => req.ip ?? req.socket.remoteAddress ?? 'unknown';

/**
 * Before routing: an IP over its unauthenticated limit is answered 429 at once when the request carries no
 * credentials; every 401 answer counts for its IP (bad or missing credentials cost the sender, whatever
 * the route). A request with credentials goes on to authentication: the per-IP limit is for
 * unauthenticated requests only (DESIGN 5c), so a signed-in user behind the same address (NAT, proxy) is
 * served, and AuthenticationGuard answers the 429 instead of a 401 when the credentials fail. The e-mail
 * links (isSignedLinkRoute) are alike: their token is their credential, and mail providers' servers POST
 * the one-click unsubscribe of many recipients from a few addresses. A link request from a blocked address
 * goes on with the block held (`res.locals`); a valid token is served, a refused one is answered the 429
 * by the problem filter. Every refused link request (any 4xx but a 429) counts for its address; a valid
 * one counts for the user it names (consumeEmailLink).
 */
export function requestRateLimitMiddleware(limiter: RequestRateLimiter) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (isRateLimitExempt(req.path)) return next();
    const ip = clientIp(req);
    // Only where AuthenticationGuard decides (the API): it answers the block for failed credentials. Elsewhere
    // (the queue dashboard's own gate, unknown paths) an Authorization header does not lift the block.
    const authenticatedByGuard = req.headers.authorization && req.path.startsWith(`/${API_PREFIX}/`);
    const signedLink = isSignedLinkRoute(req.path);
    const blocked = authenticatedByGuard ? null : limiter.ipBlock(ip);
    if (blocked && signedLink) res.locals[HELD_IP_BLOCK] = blocked;
    else if (blocked) {
      const { problem, headers } = toProblem(blocked, req.id === undefined ? undefined : String(req.id));
      return sendProblem(res, problem, headers);
    }
    res.on('finish', () => {
      const status = res.statusCode;
      if (status === 401 || (signedLink && status >= 400 && status < 500 && status !== 429)) {
        void limiter.consumeIp(ip);
      }
    });
    next();
  };
}
