import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { ValidationError } from '../../../common/errors/app-error.js';
import { pageOf, pageRequest, pageWindow } from '../../../common/paging/paging.js';
import { inclusiveRange } from '../../../common/validation/time-range.js';
import type { AuditLog, User } from '../../../generated/prisma/client.js';
import { AdminDirectoryRepository } from './admin-directory.repository.js';
import type { ListAdminUsersQueryDto, ListAuditQueryDto } from './dto/admin-list.query.dto.js';
import type {
  AdminUserItemDto,
  AdminUserListDto,
  AuditItemDto,
  AuditListDto,
} from './dto/admin-list.response.dto.js';

/** Read-only admin views of users and the audit log (newest first). */
@Injectable()
export class AdminDirectoryService {
  constructor(
    private readonly config: AppConfig,
    private readonly repository: AdminDirectoryRepository,
  ) {}

  async users(query: ListAdminUsersQueryDto): Promise<AdminUserListDto> {
    if (query.tier !== undefined && !Object.hasOwn(this.config.project.tiers, query.tier)) {
      throw new ValidationError(`tier must be one of ${Object.keys(this.config.project.tiers).join(', ')}`, [
        { field: 'tier', message: 'unknown tier' },
      ]);
    }
    const request = pageRequest(query);
    const { rows, total } = await this.repository.users(
      { emailPrefix: query.search?.trim() || undefined, tier: query.tier, deleted: query.deleted },
      pageWindow(request),
    );
    return pageOf(rows.map(userItem), total, request);
  }

  async audit(query: ListAuditQueryDto): Promise<AuditListDto> {
    const { from, to } = inclusiveRange(query.from, query.to);
    const request = pageRequest(query);
    const { rows, total } = await this.repository.audit(
      {
        action: query.action,
        actor: query.actor,
        userId: query.user_id,
        resourceType: query.resource_type,
        from,
        to,
      },
      pageWindow(request),
    );
    return pageOf(rows.map(auditItem), total, request);
  }
}

/** Profile and state only; the user row holds no secrets, and billing ids stay with billing views. */
function userItem(user: User): AdminUserItemDto {
  return {
    id: user.id,
    identity_user_id: user.identityUserId,
    email: user.email,
    current_tier: user.currentTier,
    credit_balance: user.creditBalance,
    marketing_consent_given: user.marketingConsentGiven,
    locale: user.locale,
    email_disposable: user.emailDisposable,
    provenance: user.provenance,
    utm_source: user.utmSource,
    utm_medium: user.utmMedium,
    utm_campaign: user.utmCampaign,
    created_at: user.createdAt.toISOString(),
    last_active_at: user.lastActiveAt?.toISOString() ?? null,
    deleted_at: user.deletedAt?.toISOString() ?? null,
  };
}

function auditItem(entry: AuditLog): AuditItemDto {
  return {
    id: entry.id,
    actor: entry.actor,
    action: entry.action,
    user_id: entry.userId,
    resource_type: entry.resourceType,
    resource_id: entry.resourceId,
    details: (entry.details ?? {}) as Record<string, unknown>,
    request_id: entry.requestId,
    created_at: entry.createdAt.toISOString(),
  };
}
