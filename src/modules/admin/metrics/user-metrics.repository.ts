import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { Prisma } from '../../../generated/prisma/client.js';
import type { MetricWindows } from './metric-windows.js';
import { COLLECTED_PAYMENT_STATUSES } from './revenue-metrics.repository.js';

/** The users who exist at `now` and are not soft-deleted: consent and activity in one pass. */
export interface LiveUsersRow {
  users: number;
  consented: number;
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

/**
 * The prefixes not already covered by a shorter one (`lm_` covers `lm_ebook_`): the user filter needs only
 * these, and a single remaining prefix becomes one index range instead of an OR of scans.
 */
export function coveringPrefixes(prefixes: string[]): string[] {
  const unique = [...new Set(prefixes)];
  return unique.filter((p) => !unique.some((q) => q !== p && p.startsWith(q)));
}

@Injectable()
export class UserMetricsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * The consent rate must read every live user anyway, so DAU/WAU/MAU ride along in the same pass (a
   * sequential scan of users beats an index over all of them). Soft-deleted users are neither mailable
   * nor active users.
   */
  async liveUsers(w: MetricWindows): Promise<LiveUsersRow> {
    const [row] = await this.prisma.$queryRaw<LiveUsersRow[]>`
      SELECT count(*)::int AS users,
             count(*) FILTER (WHERE marketing_consent_given)::int AS consented,
             count(*) FILTER (WHERE last_active_at > ${w.since1d} AND last_active_at <= ${w.now})::int AS dau,
             count(*) FILTER (WHERE last_active_at > ${w.since7d} AND last_active_at <= ${w.now})::int AS wau,
             count(*) FILTER (WHERE last_active_at > ${w.since30d} AND last_active_at <= ${w.now})::int AS mau
      FROM users
      WHERE deleted_at IS NULL AND created_at <= ${w.now}`;
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
   * them have a collected payment, in one pass over the matched users: literal LIKE patterns of the
   * covering prefixes use the text_pattern_ops index (index-only: it includes created_at and id), and each
   * prefix is a FILTER column. Payers are one hashed set of user ids; an EXISTS in the select list was
   * costed so high that PostgreSQL JIT-compiled the query (90 ms of pure loss).
   */
  async leadMagnets(w: MetricWindows, prefixes: string[]): Promise<LeadMagnetRow[]> {
    const matchAny = Prisma.join(
      coveringPrefixes(prefixes).map((p) => Prisma.sql`u.provenance LIKE ${likePrefix(p)} ESCAPE '\\'`),
      ' OR ',
    );
    // idx 0 is "any prefix"; column aliases are generated from indexes, never from configuration text.
    const conditions = [
      Prisma.sql`true`,
      ...prefixes.map((p) => Prisma.sql`starts_with(m.provenance, ${p})`),
    ];
    const columns = Prisma.join(
      conditions.map(
        (cond, idx) => Prisma.sql`
          count(*) FILTER (WHERE ${cond})::int AS ${Prisma.raw(`s${idx}`)},
          count(*) FILTER (WHERE ${cond} AND m.recent)::int AS ${Prisma.raw(`r${idx}`)},
          count(*) FILTER (WHERE ${cond} AND m.paid)::int AS ${Prisma.raw(`p${idx}`)}`,
      ),
      ',',
    );
    const [row] = await this.prisma.$queryRaw<Record<string, number>[]>`
      SELECT ${columns}
      FROM (
        SELECT u.provenance, u.created_at > ${w.since30d} AS recent, payer.user_id IS NOT NULL AS paid
        FROM users u
        LEFT JOIN (
          SELECT DISTINCT p.user_id FROM payments p
          WHERE p.status = ANY(${COLLECTED_PAYMENT_STATUSES}) AND p.occurred_at <= ${w.now}
        ) payer ON payer.user_id = u.id
        WHERE (${matchAny}) AND u.created_at <= ${w.now}
      ) m`;
    return conditions.map((_, idx) => ({
      idx,
      signups: row[`s${idx}`],
      signups_30d: row[`r${idx}`],
      paid_conversions: row[`p${idx}`],
    }));
  }
}
