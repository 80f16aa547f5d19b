import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { Prisma } from '../../../generated/prisma/client.js';

export interface TableEstimateRow {
  name: string;
  estimate: number;
}

export interface TableCountRow {
  name: string;
  count: number;
}

export interface WebhookCountRow {
  provider: string;
  status: string;
  count: number;
  failed_24h: number;
  skipped_24h: number;
  oldest_received: Date | null;
}

export interface ScheduledJobRow {
  name: string;
  schedule: string;
  last_status: string | null;
  last_started_at: Date | null;
  last_finished_at: Date | null;
  last_duration_ms: number | null;
  last_error: string | null;
  runs: number;
}

export interface OutboxRow {
  pending: number;
  oldest: Date | null;
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

@Injectable()
export class AdminStatsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Every application table with the planner's row estimate: the larger of reltuples (last ANALYZE) and
   * n_live_tup (kept current by the statistics system, also before the first ANALYZE).
   */
  tableEstimates(): Promise<TableEstimateRow[]> {
    return this.prisma.$queryRaw<TableEstimateRow[]>`
      SELECT c.relname::text AS name,
             GREATEST(c.reltuples, coalesce(s.n_live_tup, 0), 0)::float8 AS estimate
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND c.relname <> '_prisma_migrations'
      ORDER BY 1`;
  }

  /** Exact counts of the given tables (names come from the catalog, never from a request). */
  exactCounts(tables: string[]): Promise<TableCountRow[]> {
    if (tables.length === 0) return Promise.resolve([]);
    const parts = tables.map(
      (name) =>
        Prisma.sql`SELECT ${name}::text AS name, count(*)::float8 AS count FROM ${Prisma.raw(quoteIdent(name))}`,
    );
    return this.prisma.$queryRaw<TableCountRow[]>`${Prisma.join(parts, ' UNION ALL ')}`;
  }

  webhookCounts(since: Date): Promise<WebhookCountRow[]> {
    return this.prisma.$queryRaw<WebhookCountRow[]>`
      SELECT provider, status::text AS status, count(*)::int AS count,
             count(*) FILTER (WHERE status = 'FAILED' AND received_at > ${since})::int AS failed_24h,
             count(*) FILTER (WHERE status = 'SKIPPED' AND received_at > ${since})::int AS skipped_24h,
             min(received_at) FILTER (WHERE status = 'RECEIVED') AS oldest_received
      FROM webhook_events
      GROUP BY 1, 2`;
  }

  /** The billing backfill's checkpoint and last run (null before its first run). */
  async backfill(): Promise<{
    checkpoint: string | null;
    last_run_at: Date | null;
    last_run_processed: number | null;
  } | null> {
    const [row] = await this.prisma.$queryRaw<
      { checkpoint: string | null; last_run_at: Date | null; last_run_processed: number | null }[]
    >`SELECT checkpoint, last_run_at, last_run_processed FROM sync_checkpoints WHERE name = 'billing-backfill'`;
    return row ?? null;
  }

  async outbox(): Promise<OutboxRow> {
    const [row] = await this.prisma.$queryRaw<OutboxRow[]>`
      SELECT count(*)::int AS pending, min(created_at) AS oldest FROM outbox WHERE dispatched_at IS NULL`;
    return row;
  }

  /**
   * Every given scheduled job, left-joined to its job_runs row: a job that never ran is listed with
   * nulls (and 0 runs), so a cron that never fires is visible.
   */
  scheduledJobRuns(jobs: { name: string; schedule: string }[]): Promise<ScheduledJobRow[]> {
    const names = jobs.map((job) => job.name);
    const schedules = jobs.map((job) => job.schedule);
    return this.prisma.$queryRaw<ScheduledJobRow[]>`
      SELECT s.name, s.schedule, r.last_status, r.last_started_at, r.last_finished_at, r.last_duration_ms,
             r.last_error, coalesce(r.runs, 0)::int AS runs
      FROM unnest(${names}::text[], ${schedules}::text[]) AS s(name, schedule)
      LEFT JOIN job_runs r ON r.name = s.name
      ORDER BY s.name`;
  }
}
