import {
  applyDecorators,
  type CanActivate,
  type ExecutionContext,
  Injectable,
  UseGuards,
} from '@nestjs/common';
import type { Request } from 'express';
import { AppConfig } from '../../config/app-config.js';
import { ForbiddenError, UnauthenticatedError } from '../../common/errors/app-error.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import type { Principal } from './principal.js';
import { RequestRateLimiter } from './request-rate-limit.js';

/**
 * Admin allowlist, checked on every request against project_config.admin_emails (configuration, not
 * the database). API keys never pass. A refusal answers 403 and writes `admin.unauthorized` (at most
 * ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR rows per user and hour).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(
    private readonly config: AppConfig,
    private readonly audit: AuditService,
    private readonly limiter: RequestRateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request & { principal?: Principal }>();
    const principal = req.principal;
    if (!principal) throw new UnauthenticatedError();
    const email = principal.user.email.toLowerCase();
    if (principal.via !== 'api_key' && this.config.project.adminEmails.includes(email)) return true;

    // Rate limited per user (ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR): a probing account cannot flood the
    // audit log; the 403 is the same either way.
    if (await this.limiter.allowAdminAudit(principal.user.id))
      await this.audit.record(null, {
        actor: userActor(principal.user.identityUserId),
        action: 'admin.unauthorized',
        userId: principal.user.identityUserId,
        resourceType: 'route',
        resourceId: `${req.method} ${req.route?.path ?? req.path}`,
        details: { method: req.method, path: req.route?.path ?? req.path, via: principal.via },
      });
    throw new ForbiddenError('Administrator access is required.', 'admin_required');
  }
}

/** Restricts a controller or route to allowlisted administrators. */
export const AdminOnly = () => applyDecorators(UseGuards(AdminGuard));
