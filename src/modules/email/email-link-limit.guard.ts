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

/**
 * The routes of one e-mail link, whose token (`t`, of this purpose) is their only authentication: every
 * request with a valid token counts for the user it names (EmailLinkLimitGuard).
 */
export const EmailLinkRoutes = (purpose: UnsubscribePurpose) =>
  applyDecorators(SetMetadata(LINK_PURPOSE, purpose), UseGuards(EmailLinkLimitGuard));

/**
 * A valid e-mail link is served whatever its address has done (mail providers POST the one-click
 * unsubscribes of many recipients from a few servers; see isSignedLinkRoute), so a leaked link could be
 * replayed without end. This bounds it per user the token names (EMAIL_LINK_LIMIT: 20 a minute, both links
 * and every method sharing it): over it, 429 `rate_limited` with Retry-After, before the route changes
 * anything. A provider's one POST per recipient costs each recipient one request. A refused token is left
 * to the route (400), which counts for its address (requestRateLimitMiddleware).
 */
@Injectable()
export class EmailLinkLimitGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: UnsubscribeTokens,
    private readonly limiter: RequestRateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const purpose = this.reflector.getAllAndOverride<UnsubscribePurpose | undefined>(LINK_PURPOSE, [
      context.getHandler(),
      context.getClass(),
    ]);
    const token = context.switchToHttp().getRequest<Request>().query.t;
    const userId = purpose && typeof token === 'string' ? this.tokens.verify(token, purpose) : null;
    if (!userId) return true;
    const outcome = await this.limiter.consumeEmailLink(userId);
    if (!outcome.ok) throw outcome.error;
    return true;
  }
}
