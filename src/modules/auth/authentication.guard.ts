import { type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppConfig } from '../../config/app-config.js';
import {
  AppError,
  DependencyError,
  ForbiddenError,
  UnauthenticatedError,
} from '../../common/errors/app-error.js';
import type { ErrorCodeOf } from '../../common/errors/error-codes.js';
import { ALLOW_DELETED } from '../../common/decorators/allow-deleted.decorator.js';
import { IS_PUBLIC } from '../../common/decorators/public.decorator.js';
import { REFUSE_API_KEYS } from '../../common/decorators/refuse-api-keys.decorator.js';
import { UsersService } from '../users/users.service.js';
import { ApiKeyAuthService } from './api-key-auth.service.js';
import { looksLikeApiKey } from './api-key.util.js';
import { KeySetUnavailableError } from './identity-key-set.js';
import { StrategyFailure } from './jwt.strategy.js';
import { clientIp, RequestRateLimiter } from './request-rate-limit.js';
import type { Principal } from '../../common/principal.js';

type AuthRequest = Request & { principal?: Principal; user?: Principal };

const TOKEN_REASONS: Record<string, [string, ErrorCodeOf<401>]> = {
  TokenExpiredError: ['The token has expired.', 'token_expired'],
  NotBeforeError: ['The token is not valid yet.', 'invalid_token'],
};

/**
 * Global guard: every route is authenticated unless marked @Public(). Accepts, in order: an API key
 * (`sk_live_...`), the TESTING=1 bypass token (`test:<identity id>:<email>`, refused at boot when deployed),
 * or an RS256 identity-provider JWT through the passport-jwt strategy. API keys get 403
 * `api_key_not_allowed` on @RefuseApiKeys() routes (checked first: it is about the credential, whatever
 * the account's state). Soft-deleted users get 403 `account_deleted` except on @AllowDeleted() routes.
 */
@Injectable()
export class AuthenticationGuard extends AuthGuard('jwt') {
  private readonly logger = new Logger(AuthenticationGuard.name);

  constructor(
    private readonly reflector: Reflector,
    private readonly config: AppConfig,
    private readonly apiKeys: ApiKeyAuthService,
    private readonly users: UsersService,
    private readonly limiter: RequestRateLimiter,
  ) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;

    const req = context.switchToHttp().getRequest<AuthRequest>();
    try {
      return await this.authenticate(context, req, targets);
    } catch (err) {
      // An address over its unauthenticated limit reaches here only with credentials (the middleware
      // refuses it without): valid ones are served, failed ones get the address's 429, not a 401.
      if (err instanceof UnauthenticatedError) throw this.limiter.ipBlock(clientIp(req)) ?? err;
      throw err;
    }
  }

  private async authenticate(
    context: ExecutionContext,
    req: AuthRequest,
    targets: ReturnType<ExecutionContext['getHandler']>[],
  ): Promise<boolean> {
    const token = bearerToken(req);
    if (!token) throw new UnauthenticatedError();

    if (looksLikeApiKey(token)) {
      req.principal = await this.apiKeys.authenticate(token);
    } else if (this.config.testing && token.startsWith('test:')) {
      req.principal = await this.testingPrincipal(token);
    } else {
      await super.canActivate(context);
      req.principal = req.user;
    }
    const principal = req.principal!;
    if (principal.via === 'api_key' && this.reflector.getAllAndOverride<boolean>(REFUSE_API_KEYS, targets)) {
      throw new ForbiddenError(
        'API keys cannot do this (account lifecycle, export, billing changes, consent, API keys). Sign in to do this.',
        'api_key_not_allowed',
      );
    }
    if (principal.user.deletedAt && !this.reflector.getAllAndOverride<boolean>(ALLOW_DELETED, targets)) {
      throw new ForbiddenError('This account is scheduled for deletion.', 'account_deleted');
    }
    const touch = this.users.touchLastActive(principal.user);
    if (touch)
      touch.catch((err: Error) => this.logger.warn({ err: err.message }, 'last-active update failed'));
    return true;
  }

  override handleRequest<T>(err: unknown, user: T, info: unknown): T {
    if (err) {
      if (err instanceof AppError) throw err;
      if (err instanceof StrategyFailure) throw err.original;
      throw new DependencyError('The identity provider key set is unavailable.', 'identity_unavailable', err);
    }
    if (!user) {
      // passport-jwt reports key lookup and verification failures as `info`, not as errors.
      if (info instanceof AppError) throw info;
      // The key provider caught our own code (or jsonwebtoken) throwing: a 500, logged by the filter.
      if (info instanceof StrategyFailure) throw info.original;
      if (info instanceof KeySetUnavailableError) {
        throw new DependencyError('The identity provider key set is unavailable.', 'identity_unavailable');
      }
      const [detail, code] = TOKEN_REASONS[(info as Error | undefined)?.name ?? ''] ?? [
        'The token is invalid.',
        'invalid_token',
      ];
      throw new UnauthenticatedError(detail, code);
    }
    return user;
  }

  /** TESTING=1 only: lets tests of unrelated features skip token minting. Never active when deployed. */
  private async testingPrincipal(token: string): Promise<Principal> {
    const [, identityUserId, email] = token.split(':');
    if (!identityUserId) throw new UnauthenticatedError('Malformed test token.', 'invalid_token');
    // The bypass stands for a token issued now: the deletion guard holds for it as for a real one.
    const user =
      (await this.users.findByIdentityId(identityUserId)) ??
      (
        await this.users.ensureUserStandalone(
          {
            identityUserId,
            email: email || `${identityUserId}@test.invalid`,
            emailVerified: true,
            via: 'token',
          },
          new Date(),
        )
      )?.user;
    if (!user) throw new UnauthenticatedError('Unknown user.', 'unknown_user');
    // TESTING=1 only (refused when deployed): the bypass stands for a verified sign-in.
    return { user, via: 'testing', emailVerified: true };
  }
}

export function bearerToken(req: Request): string | null {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
