import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../../common/errors/app-error.js';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { User, WebhookEvent } from '../../../generated/prisma/client.js';
import { userActor } from '../../audit/audit.service.js';
import { isUuid } from '../../../common/validation/uuid.js';
import { inclusiveRange } from '../../../common/validation/time-range.js';
import { pageOf, pageRequest, pageWindow } from '../../../common/paging/paging.js';
import { WebhookInboxRepository } from '../../webhooks/webhook-inbox.repository.js';
import { WebhookInboxService } from '../../webhooks/webhook-inbox.service.js';
import type {
  BulkReplayDto,
  BulkReplayResultDto,
  ListWebhooksQueryDto,
  ReplayResultDto,
  WebhookDetailDto,
  WebhookItemDto,
  WebhookListDto,
} from './dto/admin-webhooks.dto.js';

/** Operators see and replay webhook deliveries (issue 17 item 3); the pipeline itself owns the rules. */
@Injectable()
export class AdminWebhooksService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly archive: WebhookInboxRepository,
    private readonly inbox: WebhookInboxService,
  ) {}

  async list(query: ListWebhooksQueryDto): Promise<WebhookListDto> {
    const { from, to } = inclusiveRange(query.from, query.to);
    const request = pageRequest(query);
    const { rows, total } = await this.archive.list(
      this.prisma,
      { provider: query.provider, status: query.status, eventType: query.event_type, from, to },
      pageWindow(request),
    );
    return pageOf(rows.map(item), total, request);
  }

  async get(id: string): Promise<WebhookDetailDto> {
    // Any id that names no row is a 404, whatever its shape (like the owned resources).
    const row = isUuid(id) ? await this.archive.find(this.prisma, id) : null;
    if (!row) throw new NotFoundError('No such webhook event.', 'not_found');
    return { ...item(row), payload: row.payload as Record<string, unknown> };
  }

  replay(id: string, admin: User): Promise<ReplayResultDto> {
    if (!isUuid(id)) throw new NotFoundError('No such webhook event.', 'not_found');
    return this.inbox.replay(id, userActor(admin.identityUserId));
  }

  async replayMany(body: BulkReplayDto, admin: User): Promise<BulkReplayResultDto> {
    const { from, to } = inclusiveRange(body.from, body.to);
    const queued = await this.inbox.replayMany(
      { status: body.status, provider: body.provider, from, to },
      userActor(admin.identityUserId),
    );
    return { queued };
  }
}

function item(row: Omit<WebhookEvent, 'payload'>): WebhookItemDto {
  return {
    id: row.id,
    provider: row.provider,
    event_id: row.eventId,
    event_type: row.eventType,
    status: row.status,
    attempts: row.attempts,
    error: row.error,
    occurred_at: row.occurredAt?.toISOString() ?? null,
    received_at: row.receivedAt.toISOString(),
    processed_at: row.processedAt?.toISOString() ?? null,
    source: row.source,
    retry_at: row.retryAt?.toISOString() ?? null,
    auto_reapplies: row.autoReapplies,
  };
}
