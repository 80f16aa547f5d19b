import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { BroadcastRun } from '../../generated/prisma/client.js';
import { AuditService, systemActor } from '../audit/audit.service.js';
import { EmailTemplates } from '../email/email.templates.js';
import type { EmailKind } from '../email/email.types.js';
import { MAX_BATCH_SIZE } from '../email/providers/email-provider.js';
import { storedAudience } from './audience.js';
import { BroadcastSender } from './broadcast-sender.js';
import { BroadcastsRepository, type RecipientCounts } from './broadcasts.repository.js';

export interface DispatchOutcome {
  runId: string;
  status: 'done' | 'failed' | 'missing';
  counts?: RecipientCounts;
}

/**
 * Runs a broadcast: queued -> running, then the audience page by page (keyset on users.id, 100 at a
 * time, users already recorded for the run left out), then done or failed. Every page is committed as
 * it is sent, so a run interrupted anywhere (worker restart, crash, provider outage) resumes where it
 * stopped when its job is delivered again, and nobody gets the e-mail twice.
 */
@Injectable()
export class BroadcastDispatcher {
  private readonly logger = new Logger(BroadcastDispatcher.name);
  /** Page size; the batch endpoint's maximum. */
  pageSize = MAX_BATCH_SIZE;

  constructor(
    private readonly prisma: PrismaService,
    private readonly repository: BroadcastsRepository,
    private readonly sender: BroadcastSender,
    private readonly templates: EmailTemplates,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  /** Throws when dispatch cannot go on now (the job is retried and resumes). */
  async run(runId: string, signal?: AbortSignal): Promise<DispatchOutcome> {
    const run = await this.repository.findById(this.prisma, runId);
    if (!run) return { runId, status: 'missing' };
    // A second delivery of a finished run's job sends nothing.
    if (run.status === 'done' || run.status === 'failed') return { runId, status: run.status };

    if (!this.templates.has(run.templateKey)) {
      // Retrying cannot bring a template back: the run fails now instead of after every retry.
      await this.fail(run.id, new Error(`template ${run.templateKey} no longer exists`));
      return { runId, status: 'failed' };
    }
    const audience = storedAudience(run.audience);
    if (run.status === 'queued') {
      const audienceSize = await this.repository.countAudience(audience);
      await this.repository.markRunning(this.prisma, run.id, audienceSize);
      this.logger.log({ run_id: run.id, recipients: audienceSize }, 'broadcast started');
    }
    const context = {
      id: run.id,
      templateKey: run.templateKey,
      kind: run.kind as EmailKind,
      bypassConsent: run.bypassConsent,
    };

    let cursor: string | null = null;
    for (;;) {
      signal?.throwIfAborted();
      const users = await this.repository.nextRecipients(run.id, audience, cursor, this.pageSize);
      if (users.length === 0) break;
      cursor = users[users.length - 1].id;
      await this.sender.process(context, users, signal);
    }
    return this.finish(run);
  }

  /** Dispatch itself broke for good (retries used up): the run ends failed with what it has recorded. */
  async fail(runId: string, error: unknown): Promise<void> {
    const message = ((error as Error)?.message ?? String(error)).slice(0, 500);
    const counts = await this.repository.countRecipients(this.prisma, runId);
    await this.end(runId, 'failed', counts, message);
    this.logger.error({ run_id: runId, err: message }, 'broadcast failed');
  }

  /** `failed` when every recipient that was tried failed (DESIGN.md section 5), otherwise `done`. */
  private async finish(run: BroadcastRun): Promise<DispatchOutcome> {
    const counts = await this.repository.countRecipients(this.prisma, run.id);
    const allFailed = counts.failed > 0 && counts.sent === 0;
    const status = allFailed ? 'failed' : 'done';
    await this.end(run.id, status, counts, allFailed ? 'every recipient failed' : null);
    this.logger.log({ run_id: run.id, status, ...counts }, 'broadcast finished');
    return { runId: run.id, status, counts };
  }

  private async end(
    runId: string,
    status: 'done' | 'failed',
    counts: RecipientCounts,
    error: string | null,
  ): Promise<void> {
    const ended = await this.prisma.$transaction(async (tx) => {
      if (!(await this.repository.finish(tx, runId, status, counts, error))) return false;
      await this.audit.record(tx, {
        actor: systemActor('broadcast'),
        action: 'broadcast.finished',
        resourceType: 'broadcast',
        resourceId: runId,
        details: {
          status,
          recipients: counts.sent + counts.failed + counts.skipped,
          sent: counts.sent,
          failed: counts.failed,
          skipped: counts.skipped,
          ...(error ? { error } : {}),
        },
      });
      return true;
    });
    // Counted once, when the run ends (a resumed run does not count its first part twice).
    if (ended) {
      for (const outcome of ['sent', 'failed', 'skipped'] as const) {
        if (counts[outcome] > 0)
          this.metrics.emails.inc({ kind: 'broadcast', status: outcome }, counts[outcome]);
      }
    }
  }
}
