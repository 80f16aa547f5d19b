import { Injectable } from '@nestjs/common';
import { NotFoundError, ValidationError } from '../../../common/errors/app-error.js';
import { pageOf, pageRequest, pageWindow } from '../../../common/paging/paging.js';
import { MetricsService } from '../../../infra/metrics/metrics.service.js';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { UsersRepository } from '../../users/users.repository.js';
import type { ListSuppressionsQueryDto, SuppressionListDto } from '../dto/suppressions.dto.js';
import { isSuppressibleAddress, normalizeAddress } from '../send-policy.js';
import { EmailSuppressionsRepository } from './suppressions.repository.js';

/** Why a value can never be on the list (the 400 of DELETE /api/v1/admin/email/suppressions/{email}). */
export const SUPPRESSIBLE_RULE =
  'No entry of the suppression list can have this value: entries are addresses of 1 to 320 characters with an @ and no NUL, compared trimmed and lower-cased.';

/** The operator's view of the suppression list: read it, and take an address off it (audited). */
@Injectable()
export class SuppressionsService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly suppressions: EmailSuppressionsRepository,
    private readonly audit: AuditService,
    private readonly users: UsersRepository,
    private readonly metrics: MetricsService,
  ) {}

  async list(query: ListSuppressionsQueryDto): Promise<SuppressionListDto> {
    const request = pageRequest(query);
    const { skip, take } = pageWindow(request);
    const { items, total } = await this.suppressions.list(this.prisma, { reason: query.reason }, skip, take);
    const rows = items.map((row) => ({
      id: row.id,
      email: row.email,
      reason: row.reason,
      created_at: row.createdAt.toISOString(),
    }));
    return pageOf(rows, total, request);
  }

  /**
   * Removes the address from the list; 404 when it is not on it. One rule decides between the two, the list's
   * own: a value no entry can have (what EmailWebhookService.suppress would not store: trimmed and
   * lower-cased, empty, over 320 characters, without an `@` or with a NUL) is a 400, any other a lookup.
   * Audited under the entry's id, never the address, and linked to the address's user when there is exactly
   * one (see EmailWebhookService.suppress).
   */
  async remove(address: string, actor: string): Promise<void> {
    if (!isSuppressibleAddress(normalizeAddress(address))) {
      throw new ValidationError(SUPPRESSIBLE_RULE, [
        { field: 'email', message: 'no entry of the suppression list can have this value' },
      ]);
    }
    await this.prisma.$transaction(async (tx) => {
      const removed = await this.suppressions.remove(tx, address);
      if (!removed) throw new NotFoundError('The address is not suppressed.', 'not_found');
      await this.audit.record(tx, {
        actor,
        action: 'email.unsuppressed',
        userId: await this.users.soleIdentityWithAddress(tx, removed.email),
        resourceType: 'email_suppression',
        resourceId: removed.id,
        details: { reason: removed.reason, source: 'admin' },
      });
    });
    this.metrics.emailUnsuppressions.inc();
  }
}
