import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { BroadcastRun } from '../../generated/prisma/client.js';
import { AuditService, systemActor } from '../audit/audit.service.js';
import { EmailTemplates } from '../email/email.templates.js';
import type { EmailKind } from '../email/email.types.js';
import { MAX_BATCH_SIZE } from '../email/providers/email-provider.js';
import { storedAudience } from './audience.js';
import { BroadcastSender, DispatchInterrupted, type RunContext } from './broadcast-sender.js';
import { BroadcastsRepository, type RecipientCounts } from './broadcasts.repository.js';

export interface DispatchOutcome {
  runId: string;
  status: 'done' | 'failed' | 'missing';
  counts?: RecipientCounts;
}

/**
 * Runs a broadcast: queued -> running, then the batches an earlier attempt left pending (gated again and
 * resent under their stored key), then the audience page by page (keyset on users.id, 100 at a time, users already recorded
 * or reserved for the run left out), then done or failed. Every page is reserved before it is sent and
 * settled after, so a run interrupted anywhere (worker restart, crash, provider outage) resumes where it
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
    // Created before BroadcastsService refused such templates: each message would go out with blanks.
    const { data } = this.templates.get(run.templateKey);
    if (data.length > 0) {
      await this.fail(
        run.id,
        new Error(`template ${run.templateKey} needs per-recipient data: ${data.join(', ')}`),
      );
      return { runId, status: 'failed' };
    }
    const audience = storedAudience(run.audience);
    if (run.status === 'queued') {
      const audienceSize = await this.repository.countAudience(audience);
      await this.repository.markRunning(this.prisma, run.id, audienceSize);
      this.logger.log({ run_id: run.id, recipients: audienceSize }, 'broadcast started');
    }
    const context: RunContext = {
      id: run.id,
      templateKey: run.templateKey,
      kind: run.kind as EmailKind,
      bypassConsent: run.bypassConsent,
    };

    await this.resendPending(context, signal);
    let cursor: string | null = null;
    for (;;) {
      signal?.throwIfAborted();
      const users = await this.repository.nextRecipients(run.id, audience, cursor, this.pageSize);
      if (users.length === 0) break;
      cursor = users[users.length - 1].id;
      await this.sender.process(context, users, signal);
    }
    // A concurrent delivery's batch may still be pending: the run is done only once it is settled.
    await this.resendPending(context, signal);
    return this.finish(run);
  }

  /**
   * Resends every batch (and single send) an interrupted attempt left pending, under its stored key and
   * without the members the send policy refuses now (BroadcastSender.resume), before any new page is read. A group that comes back after being handled was not settled (another delivery holds
   * it): the run waits for a later attempt rather than loop.
   */
  private async resendPending(context: RunContext, signal?: AbortSignal): Promise<void> {
    const handled = new Set<string>();
    for (;;) {
      signal?.throwIfAborted();
      // A whole batch whatever the page size is now: a batch holds at most MAX_BATCH_SIZE.
      const group = await this.repository.nextPendingGroup(context.id, MAX_BATCH_SIZE);
      if (!group) return;
      const id = group.batchKey ?? group.members.map((member) => member.recipientId).join(',');
      if (handled.has(id)) throw new DispatchInterrupted(new Error('pending recipients were not settled'));
      handled.add(id);
      await this.sender.resume(context, group, signal);
    }
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
    const all = await this.repository.countRecipients(this.prisma, run.id);
    // Reserved since the last look (a concurrent delivery's page): not finished until it is settled.
    if (all.pending > 0) throw new DispatchInterrupted(new Error(`${all.pending} recipients still pending`));
    const counts = { sent: all.sent, failed: all.failed, skipped: all.skipped };
    const allFailed = counts.failed > 0 && counts.sent === 0;
    const status = allFailed ? 'failed' : 'done';
    await this.end(run.id, status, all, allFailed ? 'every recipient failed' : null);
    this.logger.log({ run_id: run.id, status, ...counts }, 'broadcast finished');
    return { runId: run.id, status, counts };
  }

  private async end(
    runId: string,
    status: 'done' | 'failed',
    counts: RecipientCounts & { pending: number },
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
          // Reserved for a batch whose outcome was never learned (a run that failed mid-way).
          ...(counts.pending > 0 ? { pending: counts.pending } : {}),
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
