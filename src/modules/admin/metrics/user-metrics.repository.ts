import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { Prisma } from '../../../generated/prisma/client.js';
import type { MetricWindows } from './metric-windows.js';
import { COLLECTED_PAYMENT_STATUSES } from './revenue-metrics.repository.js';

export interface ActivityRow {
  dau: number;
  wau: number;
  mau: number;
}

export interface SignupSourceRow {
  source: string;
  signups_7d: number;
  signups_30d: number;
  disposable_7d: number;
  disposable_30d: number;
}

/** idx 0: users matching any prefix (counted once); idx n: the n-th prefix given. */
export interface LeadMagnetRow {
  idx: number;
  signups: number;
  signups_30d: number;
  paid_conversions: number;
}

/** Signups without a utm_source: `direct` when the frontend recorded attribution, else `unknown`. */
export const DIRECT_SOURCE = 'direct';
export const UNKNOWN_SOURCE = 'unknown';

/** A LIKE pattern matching values that start with `prefix` literally (`_` and `%` are common in prefixes). */
export const likePrefix = (prefix: string): string => `${prefix.replace(/[\\%_]/g, '\\$&')}%`;

@Injectable()
export class UserMetricsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Soft-deleted users are not active users. Uses the partial index on last_active_at. */
  async activity(w: MetricWindows): Promise<ActivityRow> {
    const [row] = await this.prisma.$queryRaw<ActivityRow[]>`
      SELECT count(*) FILTER (WHERE last_active_at > ${w.since1d})::int AS dau,
             count(*) FILTER (WHERE last_active_at > ${w.since7d})::int AS wau,
             count(*)::int AS mau
      FROM users
      WHERE deleted_at IS NULL AND last_active_at > ${w.since30d} AND last_active_at <= ${w.now}`;
    return row;
  }

  /** Signups of the 30-day window per normalised utm_source (soft-deleted users included: they signed up). */
  signupsBySource(w: MetricWindows): Promise<SignupSourceRow[]> {
    return this.prisma.$queryRaw<SignupSourceRow[]>`
      SELECT CASE
               WHEN btrim(coalesce(utm_source, '')) <> '' THEN lower(btrim(utm_source))
               WHEN attribution_recorded_at IS NOT NULL THEN ${DIRECT_SOURCE}
               ELSE ${UNKNOWN_SOURCE}
             END AS source,
             count(*) FILTER (WHERE created_at > ${w.since7d})::int AS signups_7d,
             count(*)::int AS signups_30d,
             count(*) FILTER (WHERE email_disposable AND created_at > ${w.since7d})::int AS disposable_7d,
             count(*) FILTER (WHERE email_disposable)::int AS disposable_30d
      FROM users
      WHERE created_at > ${w.since30d} AND created_at <= ${w.now}
      GROUP BY 1`;
  }

  /**
   * Signups whose provenance starts with each prefix (all time and the 30-day window) and how many of
   * them have a collected payment. One OR of literal LIKE patterns lets the planner use the
   * text_pattern_ops index; the per-prefix split runs on the few matched rows only.
   */
  leadMagnets(w: MetricWindows, prefixes: string[]): Promise<LeadMagnetRow[]> {
    const patterns = prefixes.map(likePrefix);
    const matchAny = Prisma.join(
      patterns.map((p) => Prisma.sql`u.provenance LIKE ${p} ESCAPE '\\'`),
      ' OR ',
    );
    return this.prisma.$queryRaw<LeadMagnetRow[]>`
      WITH matched AS (
        SELECT u.id, u.provenance, u.created_at > ${w.since30d} AS recent,
               EXISTS (
                 SELECT 1 FROM payments p
                 WHERE p.user_id = u.id AND p.status = ANY(${COLLECTED_PAYMENT_STATUSES})
                   AND p.occurred_at <= ${w.now}
               ) AS paid
        FROM users u
        WHERE (${matchAny}) AND u.created_at <= ${w.now}
      )
      SELECT e.idx::int AS idx,
             count(m.id)::int AS signups,
             count(m.id) FILTER (WHERE m.recent)::int AS signups_30d,
             count(m.id) FILTER (WHERE m.paid)::int AS paid_conversions
      FROM unnest(${patterns}::text[]) WITH ORDINALITY AS e(pattern, idx)
      LEFT JOIN matched m ON m.provenance LIKE e.pattern ESCAPE '\\'
      GROUP BY e.idx
      UNION ALL
      SELECT 0, count(*)::int, count(*) FILTER (WHERE recent)::int, count(*) FILTER (WHERE paid)::int
      FROM matched`;
  }
}
