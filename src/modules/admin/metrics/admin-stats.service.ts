import { Injectable } from '@nestjs/common';
import { scheduledJobs } from '../../../infra/queue/queues.js';
import { AdminStatsRepository } from './admin-stats.repository.js';
import { Clock } from './clock.js';
import type { AdminStatsDto, TableCountDto, WebhookStatusCountsDto } from './dto/admin-stats.dto.js';
import { DAY_MS } from './metric-windows.js';
import { QueueHealthService } from './queue-health.service.js';

/**
 * Tables estimated above this many rows are reported from the planner's statistics: an exact count(*)
 * of a million-row table costs a full scan on every dashboard refresh.
 */
export const EXACT_COUNT_LIMIT = 100_000;

const emptyStatusCounts = (): WebhookStatusCountsDto => ({
  received: 0,
  processed: 0,
  failed: 0,
  skipped: 0,
  total: 0,
});

@Injectable()
export class AdminStatsService {
  constructor(
    private readonly clock: Clock,
    private readonly repository: AdminStatsRepository,
    private readonly queueHealth: QueueHealthService,
  ) {}

  async stats(): Promise<AdminStatsDto> {
    const now = this.clock.now();
    const since24h = new Date(now.getTime() - DAY_MS);
    const [tables, queues, jobRuns, webhooks, outbox, backfill] = await Promise.all([
      this.tableCounts(),
      this.queueHealth.report(now),
      this.repository.scheduledJobRuns(scheduledJobs()),
      this.repository.webhookCounts(since24h),
      this.repository.outbox(),
      this.repository.backfill(),
    ]);

    const byStatus = emptyStatusCounts();
    const byProvider: Record<string, WebhookStatusCountsDto> = {};
    let failed24h = 0;
    let skipped24h = 0;
    let oldestReceived: Date | null = null;
    for (const row of webhooks) {
      skipped24h += row.skipped_24h;
      if (row.oldest_received && (!oldestReceived || row.oldest_received < oldestReceived)) {
        oldestReceived = row.oldest_received;
      }
      const key = row.status.toLowerCase() as keyof WebhookStatusCountsDto;
      const provider = (byProvider[row.provider] ??= emptyStatusCounts());
      for (const counts of [byStatus, provider]) {
        counts[key] = (counts[key] ?? 0) + row.count;
        counts.total += row.count;
      }
      failed24h += row.failed_24h;
    }

    return {
      generated_at: now.toISOString(),
      tables,
      queues,
      scheduled_jobs: jobRuns.map((run) => ({
        name: run.name,
        schedule: run.schedule,
        last_status: run.last_status,
        last_started_at: run.last_started_at?.toISOString() ?? null,
        last_finished_at: run.last_finished_at?.toISOString() ?? null,
        last_duration_ms: run.last_duration_ms,
        last_error: run.last_error,
        runs: run.runs,
      })),
      webhooks: {
        by_status: byStatus,
        by_provider: byProvider,
        failed_last_24h: failed24h,
        skipped_last_24h: skipped24h,
        oldest_unprocessed_at: oldestReceived?.toISOString() ?? null,
        backfill: {
          checkpoint: backfill?.checkpoint ?? null,
          last_run_at: backfill?.last_run_at?.toISOString() ?? null,
          last_run_processed: backfill?.last_run_processed ?? null,
        },
      },
      outbox: { pending: outbox.pending, oldest_pending_at: outbox.oldest?.toISOString() ?? null },
    };
  }

  private async tableCounts(): Promise<Record<string, TableCountDto>> {
    const estimates = await this.repository.tableEstimates();
    const small = estimates.filter((t) => t.estimate < EXACT_COUNT_LIMIT).map((t) => t.name);
    const exact = new Map((await this.repository.exactCounts(small)).map((r) => [r.name, r.count]));
    return Object.fromEntries(
      estimates.map((t) => {
        const count = exact.get(t.name);
        return [
          t.name,
          count === undefined ? { count: Math.round(t.estimate), exact: false } : { count, exact: true },
        ];
      }),
    );
  }
}
