import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { MetricWindows } from './metric-windows.js';

export interface EmailCountsRow {
  sent_7d: number;
  failed_7d: number;
  skipped_7d: number;
  sent_30d: number;
  failed_30d: number;
  skipped_30d: number;
}

export interface UnsubscribedRow {
  unsubscribed_7d: number;
  unsubscribed_30d: number;
}

export interface DeliverabilityDayRow {
  date: string;
  bounces: number;
  complaints: number;
  suppressions: number;
}

export interface BroadcastRunRow {
  id: string;
  status: string;
  template_key: string;
  kind: string;
  recipients_total: number;
  sent_count: number;
  failed_count: number;
  skipped_count: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

@Injectable()
export class MailingMetricsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Both windows in one range scan of the (created_at, status) index. */
  async emailCounts(w: MetricWindows): Promise<EmailCountsRow> {
    const [row] = await this.prisma.$queryRaw<EmailCountsRow[]>`
      SELECT count(*) FILTER (WHERE status = 'sent' AND created_at > ${w.since7d})::int AS sent_7d,
             count(*) FILTER (WHERE status = 'failed' AND created_at > ${w.since7d})::int AS failed_7d,
             count(*) FILTER (WHERE status = 'skipped' AND created_at > ${w.since7d})::int AS skipped_7d,
             count(*) FILTER (WHERE status = 'sent')::int AS sent_30d,
             count(*) FILTER (WHERE status = 'failed')::int AS failed_30d,
             count(*) FILTER (WHERE status = 'skipped')::int AS skipped_30d
      FROM email_messages
      WHERE created_at > ${w.since30d} AND created_at <= ${w.now}`;
    return row;
  }

  /** Distinct users who withdrew marketing consent (unsubscribe link or profile) in each window. */
  async unsubscribed(w: MetricWindows): Promise<UnsubscribedRow> {
    const [row] = await this.prisma.$queryRaw<UnsubscribedRow[]>`
      SELECT count(DISTINCT user_id) FILTER (WHERE created_at > ${w.since7d})::int AS unsubscribed_7d,
             count(DISTINCT user_id)::int AS unsubscribed_30d
      FROM email_consent_events
      WHERE created_at > ${w.since30d} AND created_at <= ${w.now} AND given = false`;
    return row;
  }

  async lastBroadcast(w: MetricWindows): Promise<BroadcastRunRow | null> {
    const rows = await this.prisma.$queryRaw<BroadcastRunRow[]>`
      SELECT id::text, status::text, template_key, kind, recipients_total, sent_count, failed_count,
             skipped_count, created_at, started_at, finished_at
      FROM broadcast_runs
      WHERE created_at <= ${w.now}
      ORDER BY created_at DESC, id DESC
      LIMIT 1`;
    return rows[0] ?? null;
  }

  /**
   * Per UTC day of the last 30 (oldest first, every day listed): bounces and complaints the e-mail
   * provider reported (webhook archive rows applied; a repeated complaint about one message is SKIPPED and
   * not counted) and addresses added to the suppression list (its `email.suppressed` audit entries, so an
   * address an operator took off again still counts on the day it was added).
   */
  async deliverabilityByDay(w: MetricWindows): Promise<DeliverabilityDayRow[]> {
    return this.prisma.$queryRaw<DeliverabilityDayRow[]>`
      WITH days AS (
        SELECT generate_series(date_trunc('day', ${w.since30d}::timestamptz AT TIME ZONE 'UTC'),
                               date_trunc('day', ${w.now}::timestamptz AT TIME ZONE 'UTC'),
                               interval '1 day') AS day
      ), events AS (
        SELECT date_trunc('day', received_at AT TIME ZONE 'UTC') AS day,
               count(*) FILTER (WHERE event_type = 'email.bounced')::int AS bounces,
               count(*) FILTER (WHERE event_type = 'email.complained')::int AS complaints
        FROM webhook_events
        WHERE provider = 'email' AND status = 'PROCESSED'
          AND received_at > ${w.since30d} AND received_at <= ${w.now}
        GROUP BY 1
      ), suppressed AS (
        SELECT date_trunc('day', created_at AT TIME ZONE 'UTC') AS day, count(*)::int AS suppressions
        FROM audit_logs
        WHERE action = 'email.suppressed' AND created_at > ${w.since30d} AND created_at <= ${w.now}
        GROUP BY 1
      )
      SELECT to_char(days.day, 'YYYY-MM-DD') AS date, coalesce(e.bounces, 0) AS bounces,
             coalesce(e.complaints, 0) AS complaints, coalesce(s.suppressions, 0) AS suppressions
      FROM days LEFT JOIN events e ON e.day = days.day LEFT JOIN suppressed s ON s.day = days.day
      ORDER BY days.day`;
  }

  async suppressedAddresses(): Promise<number> {
    const [row] = await this.prisma.$queryRaw<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM email_suppressions`;
    return row.n;
  }
}
