import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { MetricWindows } from './metric-windows.js';

export interface CreditDayRow {
  /** UTC date, YYYY-MM-DD */
  day: string;
  kind: string;
  credits: number;
}

export interface PackSalesRow {
  currency: string;
  sold: number;
  credits: number;
  amount: number;
}

/** Ledger kinds the overview reports; spends are net of what settles and refunds gave back. */
export const CREDIT_METRIC_KINDS = ['grant', 'purchase', 'spend', 'settle', 'refund', 'expiry', 'clawback'];

@Injectable()
export class CreditMetricsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** Sum of delta per UTC day and kind over the 30-day window (index on (kind, created_at)). */
  creditsByDay(w: MetricWindows): Promise<CreditDayRow[]> {
    return this.prisma.$queryRaw<CreditDayRow[]>`
      SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, kind, sum(delta)::float8 AS credits
      FROM credit_transactions
      WHERE kind = ANY(${CREDIT_METRIC_KINDS}) AND created_at > ${w.since30d} AND created_at <= ${w.now}
      GROUP BY 1, 2
      ORDER BY 1`;
  }

  /** Top-up packs sold in the window: their purchase rows and the payments that paid for them. */
  packSales(w: MetricWindows): Promise<PackSalesRow[]> {
    return this.prisma.$queryRaw<PackSalesRow[]>`
      SELECT upper(p.currency) AS currency, count(*)::int AS sold, sum(c.delta)::float8 AS credits,
             sum(p.amount_total)::float8 AS amount
      FROM credit_transactions c
      JOIN payments p ON p.provider_transaction_id = c.job_id
      WHERE c.kind = 'purchase' AND c.created_at > ${w.since30d} AND c.created_at <= ${w.now}
      GROUP BY 1`;
  }
}
