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

  /**
   * Collected payments and approved refunds of the 30-day window, per currency. A transaction's refunds
   * together count at most what its payment collected (decision "refunds capped per transaction"): taken in
   * the order (occurred_at, provider_adjustment_id), each refund counts what the refunds before it (those
   * before the window too) left of the payment, so a refund redelivered, replayed or backfilled under a new
   * adjustment id, or a partial and a full refund of one transaction, never take more than was paid. A
   * refund capped to 0 is left out (neither amount nor count); one in another currency than its payment is
   * capped to 0 and leaves the payment's room to the others; one whose transaction has no payment row
   * counts as recorded (there is nothing to cap against).
   *
   * One statement: the window's refunds (range scan on occurred_at), the payment of each of their
   * transactions (one unique-index probe each: LATERAL ... LIMIT 1 keeps the planner from hashing all of
   * payments), the earlier refunds of those transactions, and a running sum per transaction.
   */
  moneyLast30Days(w: MetricWindows): Promise<MoneyRow[]> {
    return this.prisma.$queryRaw<MoneyRow[]>`
      WITH recent AS (
        SELECT provider_transaction_id AS txn, provider_adjustment_id AS id, occurred_at,
               upper(currency) AS currency, abs(amount_total::bigint) AS amount, true AS in_window
        FROM billing_adjustments
        WHERE occurred_at > ${w.since30d} AND occurred_at <= ${w.now}
          AND action = 'refund' AND status = 'approved'
      ),
      paid AS (
        SELECT t.txn, p.collected, p.currency
        FROM (SELECT DISTINCT txn FROM recent WHERE txn IS NOT NULL) t
        CROSS JOIN LATERAL (
          SELECT CASE WHEN status = ANY(${COLLECTED_PAYMENT_STATUSES}) THEN amount_total::bigint ELSE 0 END
                   AS collected,
                 upper(currency) AS currency
          FROM payments WHERE provider_transaction_id = t.txn LIMIT 1) p
      ),
      refunds AS (
        SELECT * FROM recent
        UNION ALL
        SELECT a.provider_transaction_id, a.provider_adjustment_id, a.occurred_at, upper(a.currency),
               abs(a.amount_total::bigint), false
        FROM paid JOIN billing_adjustments a ON a.provider_transaction_id = paid.txn
        WHERE a.occurred_at <= ${w.since30d} AND a.action = 'refund' AND a.status = 'approved'
      ),
      counted AS (
        SELECT r.currency, r.in_window, p.collected,
               CASE WHEN p.txn IS NULL THEN r.amount
                    WHEN r.currency <> p.currency THEN 0
                    ELSE least(r.amount, greatest(p.collected - coalesce(
                      sum(r.amount) FILTER (WHERE r.currency = p.currency) OVER (
                        PARTITION BY r.txn ORDER BY r.occurred_at, r.id
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0), 0)) END AS amount
        FROM refunds r
        LEFT JOIN paid p ON p.txn = r.txn
      )
      SELECT 'payment' AS kind, upper(currency) AS currency, count(*)::int AS count,
             sum(amount_total)::float8 AS amount
      FROM payments
      WHERE occurred_at > ${w.since30d} AND occurred_at <= ${w.now}
        AND status = ANY(${COLLECTED_PAYMENT_STATUSES})
      GROUP BY 2
      UNION ALL
      SELECT 'refund', currency, count(*)::int, sum(amount)::float8
      FROM counted
      WHERE in_window AND (collected IS NULL OR amount > 0)
      GROUP BY 2`;
  }
}
