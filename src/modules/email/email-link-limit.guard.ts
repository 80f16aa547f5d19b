import {
  applyDecorators,
  type CanActivate,
  type ExecutionContext,
  Injectable,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { RequestRateLimiter } from '../auth/request-rate-limit.js';
import { type UnsubscribePurpose, UnsubscribeTokens } from './unsubscribe-tokens.js';

const LINK_PURPOSE = 'emailLinkPurpose';
const NEVER_REFUSED = 'emailLinkNeverRefused';

/**
 * The routes of one e-mail link, whose token (`t`, of this purpose) is their only authentication: every
 * request with a valid token counts for the user it names (EmailLinkLimitGuard).
 */
export const EmailLinkRoutes = (purpose: UnsubscribePurpose) =>
  applyDecorators(SetMetadata(LINK_PURPOSE, purpose), UseGuards(EmailLinkLimitGuard));

/**
 * A route of an e-mail link that the per-user bound neither refuses nor counts: the RFC 8058 one-click
 * unsubscribe POST. Refused, a withdrawal would be lost (the mail provider does not retry it; Gmail and
 * Yahoo require it honoured), which link scanners fetching the page, or a replay of a leaked link, could
 * cause for the user. It is idempotent: a replay changes nothing and writes nothing (a conditional update
 * that matches no row), so there is nothing to bound. Counted, its replays would use up the user's budget
 * for the pages and the confirmation.
 */
export const NeverRefusedEmailLink = () => SetMetadata(NEVER_REFUSED, true);

/**
 * A valid e-mail link is served whatever its address has done (mail providers POST the one-click
 * unsubscribes of many recipients from a few servers; see isSignedLinkRoute), so a leaked link could be
 * replayed without end. This bounds it per user the token names (EMAIL_LINK_LIMIT: 20 a minute, both links
 * and every method sharing it, but for the one-click unsubscribe, NeverRefusedEmailLink): over it, 429
 * `rate_limited` with Retry-After, before the route changes anything. A refused token is left to the route
 * (400), which counts for its address (requestRateLimitMiddleware).
 */
@Injectable()
export class EmailLinkLimitGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: UnsubscribeTokens,
    private readonly limiter: RequestRateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean | undefined>(NEVER_REFUSED, targets)) return true;
    const purpose = this.reflector.getAllAndOverride<UnsubscribePurpose | undefined>(LINK_PURPOSE, targets);
    const token = context.switchToHttp().getRequest<Request>().query.t;
    const userId = purpose && typeof token === 'string' ? this.tokens.verify(token, purpose) : null;
    if (!userId) return true;
    const outcome = await this.limiter.consumeEmailLink(userId);
    if (!outcome.ok) throw outcome.error;
    return true;
  }
}
