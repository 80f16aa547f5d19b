import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { MetricWindows } from './metric-windows.js';

/** One group of subscriptions sharing everything MRR depends on (several rows may fold to one key). */
export interface SubscriptionGroupRow {
  status: string;
  tier: string;
  currency: string | null;
  interval: string | null;
  frequency: number | null;
  /** The expiry job already downgraded the user for it (a lapsed past_due subscription). */
  expired: boolean;
  subscriptions: number;
  /** Rows of the group with a unit amount (the others cannot be priced). */
  priced: number;
  /** SUM(unit_amount x quantity) over the priced rows, minor units. */
  amount: number | null;
  churned: number;
  churned_amount: number | null;
}

export interface MoneyRow {
  kind: 'payment' | 'refund';
  currency: string;
  count: number;
  amount: number;
}

/** Payment statuses that mean the money was collected (one row per provider transaction). */
export const COLLECTED_PAYMENT_STATUSES = ['completed', 'paid'];

@Injectable()
export class RevenueMetricsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * One pass over subscriptions (tens of thousands of rows at most: cheaper than any index) gives the
   * status counts, the MRR inputs and the churn of the window. Grouping is on the raw columns; casts and
   * case folding run once per group (3x cheaper than per row), and groups that fold together are merged
   * by the caller.
   */
  subscriptionGroups(w: MetricWindows): Promise<SubscriptionGroupRow[]> {
    return this.prisma.$queryRaw<SubscriptionGroupRow[]>`
      SELECT status::text AS status,
             tier,
             upper(currency) AS currency,
             lower(billing_interval) AS interval,
             billing_frequency AS frequency,
             (expired_at IS NOT NULL AND expired_at <= ${w.now}) AS expired,
             count(*)::int AS subscriptions,
             count(unit_amount)::int AS priced,
             sum(unit_amount::bigint * quantity)::float8 AS amount,
             count(*) FILTER (WHERE status = 'CANCELED' AND canceled_at > ${w.since30d}
                                AND canceled_at <= ${w.now})::int AS churned,
             sum(unit_amount::bigint * quantity) FILTER (WHERE status = 'CANCELED' AND canceled_at > ${w.since30d}
                                AND canceled_at <= ${w.now})::float8 AS churned_amount
      FROM subscriptions
      WHERE created_at <= ${w.now}
      GROUP BY status, tier, currency, billing_interval, billing_frequency, 6`;
  }

  /** Collected payments and approved refunds of the 30-day window, per currency. */
  moneyLast30Days(w: MetricWindows): Promise<MoneyRow[]> {
    return this.prisma.$queryRaw<MoneyRow[]>`
      SELECT 'payment' AS kind, upper(currency) AS currency, count(*)::int AS count,
             sum(amount_total)::float8 AS amount
      FROM payments
      WHERE occurred_at > ${w.since30d} AND occurred_at <= ${w.now}
        AND status = ANY(${COLLECTED_PAYMENT_STATUSES})
      GROUP BY 2
      UNION ALL
      SELECT 'refund', upper(currency), count(*)::int, sum(abs(amount_total))::float8
      FROM billing_adjustments
      WHERE occurred_at > ${w.since30d} AND occurred_at <= ${w.now}
        AND action = 'refund' AND status = 'approved'
      GROUP BY 2`;
  }
}
