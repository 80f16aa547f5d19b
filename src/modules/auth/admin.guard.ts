import {
  applyDecorators,
  type CanActivate,
  type ExecutionContext,
  Injectable,
  Logger,
  UseGuards,
} from '@nestjs/common';
import type { Request } from 'express';
import { AppConfig } from '../../config/app-config.js';
import { ForbiddenError, UnauthenticatedError } from '../../common/errors/app-error.js';
import { isUniqueViolation } from '../../common/errors/database-errors.js';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';
import { canonicalEmail } from '../../common/validation/canonical-email.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { AdminEmailRepository } from './admin-email.repository.js';
import type { Principal } from '../../common/principal.js';
import { RequestRateLimiter } from './request-rate-limit.js';

type Refusal = 'api_key' | 'email_not_verified' | 'not_allowlisted' | 'address_held_by_another_identity';

/**
 * Admin allowlist, checked on every request against project_config.admin_emails (configuration, not
 * the database). Admin rights need all of:
 * - an interactive sign-in (API keys never pass);
 * - a stored address the identity provider verified (`users.email_verified`: a verified identity-webhook
 *   payload or a token's `email_verified: true` for that very address);
 * - that address in the allowlist, compared in canonical ASCII form (no Unicode case folding);
 * - that address bound to this identity (`users.admin_email`, unique): the first verified identity to
 *   use it gets it (logged and audited `admin.granted`); another identity holding the same address gets
 *   403 until the holder loses it (address changed or unverified, account deleted).
 * A refusal answers 403 and writes `admin.unauthorized` with the reason (at most
 * ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR rows per user and hour). The code is `api_key_not_allowed` for an API
 * key, whoever owns it (DESIGN 5: the stable code of "an API key on a route that refuses them"), and
 * `admin_required` for every other refusal.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly logger = new Logger(AdminGuard.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly audit: AuditService,
    private readonly limiter: RequestRateLimiter,
    private readonly adminEmails: AdminEmailRepository,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request & { principal?: Principal }>();
    const principal = req.principal;
    if (!principal) throw new UnauthenticatedError();
    await this.authorize(principal, req);
    return true;
  }

  /**
   * The allowlist decision for a principal authenticated some other way than the global guard (the queue
   * dashboard's session cookie): returns when it is an admin, else audits and throws 403 like a route.
   */
  async authorize(principal: Principal, req: Request): Promise<void> {
    const refusal = await this.check(principal);
    if (!refusal) return;

    // Rate limited per user (ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR): a probing account cannot flood the
    // audit log; the 403 is the same either way.
    if (await this.limiter.allowAdminAudit(principal.user.id))
      await this.audit.recordStandalone({
        actor: userActor(principal.user.identityUserId),
        action: 'admin.unauthorized',
        userId: principal.user.identityUserId,
        resourceType: 'route',
        resourceId: `${req.method} ${req.route?.path ?? req.path}`,
        details: {
          method: req.method,
          path: req.route?.path ?? req.path,
          via: principal.via,
          reason: refusal,
        },
      });
    if (refusal === 'api_key')
      throw new ForbiddenError(
        "API keys cannot call admin routes, even an administrator's. Sign in to do this.",
        'api_key_not_allowed',
      );
    throw new ForbiddenError('Administrator access is required.', 'admin_required');
  }

  private async check(principal: Principal): Promise<Refusal | null> {
    if (principal.via === 'api_key') return 'api_key';
    const email = canonicalEmail(principal.user.email);
    if (!email || !this.config.project.adminEmails.includes(email)) return 'not_allowlisted';
    if (!principal.emailVerified) return 'email_not_verified';
    if (principal.user.adminEmail === email) return null;
    return (await this.bind(principal.user, email)) ? null : 'address_held_by_another_identity';
  }

  /**
   * Binds the address to this identity unless another identity that still holds it verified has it. The
   * holder's row is locked, so two identities racing for a free address end with one holder (the unique
   * index refuses the second).
   */
  private async bind(user: User, email: string): Promise<boolean> {
    try {
      return await this.prisma.$transaction(async (tx) => {
        const holder = await this.adminEmails.lockHolder(tx, email);
        if (holder && holder.id !== user.id) {
          const stillHolds =
            !holder.deleted && holder.email_verified && canonicalEmail(holder.email) === email;
          if (stillHolds) return false;
          await this.adminEmails.release(tx, holder.id);
        }
        const bound = await this.adminEmails.bind(tx, user.id, email);
        if (bound === 1) {
          await this.audit.record(tx, {
            actor: userActor(user.identityUserId),
            action: 'admin.granted',
            userId: user.identityUserId,
            resourceType: 'user',
            resourceId: user.id,
            details: {
              reason: 'first admin request of this identity for an allowlisted, verified address',
              ...(holder && holder.id !== user.id ? { previous_holder: holder.identity_user_id } : {}),
            },
          });
          this.logger.warn(
            { user_id: user.id, identity_user_id: user.identityUserId },
            'admin rights granted to an identity seen for the first time',
          );
        }
        return true;
      });
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }
}

/** Restricts a controller or route to allowlisted administrators (and documents its 403s once). */
export const AdminOnly = () =>
  applyDecorators(
    UseGuards(AdminGuard),
    ApiErrors({
      403: {
        admin_required: 'not an allowlisted administrator (audited as admin.unauthorized)',
        api_key_not_allowed: 'called with an API key, whoever owns it (audited as admin.unauthorized)',
      },
    }),
  );
