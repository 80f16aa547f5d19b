import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { ConflictError, NotFoundError, ValidationError } from '../../common/errors/app-error.js';
import { isUniqueViolation } from '../../common/errors/database-errors.js';
import {
  assertSameRequest,
  type IdempotentOutcome,
  parseIdempotencyKey,
  requestHash,
} from '../../common/idempotency/idempotency-key.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import type { BroadcastRun, User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { EmailTemplates } from '../email/email.templates.js';
import { normalizeAudience, storedAudience } from './audience.js';
import { BroadcastsRepository } from './broadcasts.repository.js';
import type { BroadcastListDto, BroadcastResponseDto } from './dto/broadcast-response.dto.js';
import type { CreateBroadcastDto } from './dto/create-broadcast.dto.js';
import { isUuid } from '../../common/validation/uuid.js';
import { type PageRequest, pageOf, pageWindow } from '../../common/paging/paging.js';

export const broadcastJobId = (runId: string) => `broadcast-${runId}`;

export function toResponse(run: BroadcastRun): BroadcastResponseDto {
  return {
    id: run.id,
    status: run.status,
    template_key: run.templateKey,
    kind: run.kind,
    audience: storedAudience(run.audience),
    bypass_consent: run.bypassConsent,
    counts: {
      recipients: run.recipientsTotal,
      sent: run.sentCount,
      failed: run.failedCount,
      skipped: run.skippedCount,
    },
    created_by: run.createdBy,
    created_at: run.createdAt.toISOString(),
    started_at: run.startedAt?.toISOString() ?? null,
    finished_at: run.finishedAt?.toISOString() ?? null,
    error: run.error,
  };
}

/**
 * What the run's creation answered: the columns the dispatcher moves on since (status, counts, times,
 * error) as every run is created, the others as they are (they never change).
 */
function asCreated(run: BroadcastRun): BroadcastRun {
  return {
    ...run,
    status: 'queued',
    recipientsTotal: 0,
    sentCount: 0,
    failedCount: 0,
    skippedCount: 0,
    startedAt: null,
    finishedAt: null,
    error: null,
  };
}

/** `replayed`: the answer of an earlier request with the same Idempotency-Key; no run was created. */
export type BroadcastOutcome = IdempotentOutcome<BroadcastResponseDto>;

/** Admin broadcasts: create a run (queued + audit + dispatcher job in one transaction), list, show. */
@Injectable()
export class BroadcastsService {
  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly repository: BroadcastsRepository,
    private readonly templates: EmailTemplates,
    private readonly audit: AuditService,
    private readonly outbox: OutboxService,
    private readonly uow: UnitOfWork,
  ) {}

  /**
   * With an Idempotency-Key the run keeps the key (unique per admin) and the fingerprint of the normalised
   * request: a retry, or a concurrent request, with the key gets the first request's answer and creates no
   * run, audit entry or dispatcher job; with another request it is 422. Without a key every call is a run.
   */
  async create(admin: User, dto: CreateBroadcastDto, idempotencyKey?: string): Promise<BroadcastOutcome> {
    const key = parseIdempotencyKey(idempotencyKey);
    if (!this.templates.has(dto.template_key)) {
      throw new ValidationError(
        'Unknown e-mail template.',
        [{ field: 'template_key', message: `known templates: ${this.templates.keys().join(', ')}` }],
        'unknown_template',
      );
    }
    const { kind, data } = this.templates.get(dto.template_key);
    // Rendered without per-recipient values, such a template went out with blanks (an empty payment link).
    if (data.length > 0) {
      throw new ValidationError(
        'This e-mail template needs values of its own for each recipient and cannot be broadcast.',
        [{ field: 'template_key', message: `needs ${data.map((name) => `data.${name}`).join(', ')}` }],
        'template_needs_data',
      );
    }
    const bypassConsent = dto.bypass_consent ?? false;
    if (kind === 'marketing' && bypassConsent) {
      throw new ConflictError(
        'Marketing e-mail is sent only with consent; bypass_consent is not allowed.',
        'consent_required',
      );
    }
    const audience = normalizeAudience(dto.audience, Object.keys(this.config.project.tiers));
    const actor = userActor(admin.identityUserId);
    // Normalised, so the same request written differently (a default spelled out, another case) matches.
    const hash = requestHash({ template_key: dto.template_key, audience, bypass_consent: bypassConsent });
    if (key !== undefined) {
      const earlier = await this.earlier(actor, key, hash);
      if (earlier) return earlier;
    }

    let run: BroadcastRun;
    try {
      run = await this.uow.run(async (tx) => {
        const created = await this.repository.create(tx, {
          templateKey: dto.template_key,
          kind,
          audience: { ...audience },
          bypassConsent,
          createdBy: actor,
          idempotencyKey: key ?? null,
          requestHash: key === undefined ? null : hash,
        });
        await this.audit.record(tx, {
          actor,
          action: 'broadcast.queued',
          userId: admin.identityUserId,
          resourceType: 'broadcast',
          resourceId: created.id,
          details: {
            template: dto.template_key,
            kind,
            bypass_consent: bypassConsent,
            audience_tiers: audience.tiers,
            audience_locales: audience.locales,
            audience_signed_up_after: audience.signed_up_after,
            audience_signed_up_before: audience.signed_up_before,
          },
        });
        await this.outbox.add(tx, JOBS.dispatchBroadcast, { runId: created.id }, broadcastJobId(created.id));
        return created;
      });
    } catch (err) {
      // A concurrent request with the same key committed its run first: our insert waited for it, then
      // failed, and rolled back with it our audit entry and dispatcher job.
      const earlier =
        key !== undefined && isUniqueViolation(err) ? await this.earlier(actor, key, hash) : null;
      if (earlier) return earlier;
      throw err;
    }
    return { body: toResponse(run), replayed: false };
  }

  /** The run `actor` created with `key`, answered as its creation was; 422 when it came with another request. */
  private async earlier(actor: string, key: string, hash: string): Promise<BroadcastOutcome | null> {
    const run = await this.repository.findByIdempotencyKey(this.prisma, actor, key);
    if (!run) return null;
    assertSameRequest(run.requestHash, hash);
    return { body: toResponse(asCreated(run)), replayed: true };
  }

  async list(request: PageRequest): Promise<BroadcastListDto> {
    const { skip, take } = pageWindow(request);
    const { items, total } = await this.repository.list(this.prisma, skip, take);
    return pageOf(items.map(toResponse), total, request);
  }

  async get(id: string): Promise<BroadcastResponseDto> {
    const run = isUuid(id) ? await this.repository.findById(this.prisma, id) : null;
    if (!run) throw new NotFoundError('The broadcast does not exist.');
    return toResponse(run);
  }
}
