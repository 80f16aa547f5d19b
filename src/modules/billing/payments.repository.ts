import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../infra/prisma/prisma.service.js';

export interface PaymentRecord {
  userId: string | null;
  providerTransactionId: string;
  providerSubscriptionId: string | null;
  status: string;
  origin: string | null;
  tier: string | null;
  amountTotal: number;
  currency: string;
  occurredAt: Date;
}

export interface AdjustmentRecord {
  userId: string | null;
  providerAdjustmentId: string;
  providerTransactionId: string | null;
  action: string;
  status: string;
  amountTotal: number;
  currency: string;
  occurredAt: Date;
  /** The provider's updated_at: an older adjustment event never overwrites a newer one. */
  updatedAt: Date;
}

/** Payments and adjustments: the accounting records revenue metrics read (kept after user erasure). */
@Injectable()
export class PaymentsRepository {
  upsertPayment(tx: Tx, record: PaymentRecord) {
    const { providerTransactionId, ...rest } = record;
    return tx.payment.upsert({
      where: { providerTransactionId },
      create: record,
      // A known owner is never replaced by "unknown".
      update: { ...rest, userId: rest.userId ?? undefined },
    });
  }

  /** Payments that arrived before their subscription was known get their owner when it is. */
  async linkPaymentsToUser(tx: Tx, providerSubscriptionId: string, userId: string): Promise<number> {
    const result = await tx.payment.updateMany({
      where: { providerSubscriptionId, userId: null },
      data: { userId },
    });
    return result.count;
  }

  /** Insert, or update when this event is at least as new as the stored one; returns the row id. */
  async upsertAdjustment(tx: Tx, record: AdjustmentRecord): Promise<{ id: string; applied: boolean }> {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO billing_adjustments (id, user_id, provider_adjustment_id, provider_transaction_id, action,
        status, amount_total, currency, occurred_at, updated_at)
      VALUES (gen_random_uuid(), ${record.userId}::uuid, ${record.providerAdjustmentId},
        ${record.providerTransactionId}, ${record.action}, ${record.status}, ${record.amountTotal},
        ${record.currency}, ${record.occurredAt}, ${record.updatedAt})
      ON CONFLICT (provider_adjustment_id) DO UPDATE SET
        status = EXCLUDED.status, action = EXCLUDED.action, amount_total = EXCLUDED.amount_total,
        currency = EXCLUDED.currency, updated_at = EXCLUDED.updated_at,
        user_id = COALESCE(billing_adjustments.user_id, EXCLUDED.user_id),
        provider_transaction_id = COALESCE(EXCLUDED.provider_transaction_id, billing_adjustments.provider_transaction_id)
      WHERE billing_adjustments.updated_at <= EXCLUDED.updated_at
      RETURNING id`;
    if (rows.length > 0) return { id: rows[0].id, applied: true };
    const existing = await tx.billingAdjustment.findUniqueOrThrow({
      where: { providerAdjustmentId: record.providerAdjustmentId },
      select: { id: true },
    });
    return { id: existing.id, applied: false };
  }

  findPaymentOwner(db: Db, providerTransactionId: string) {
    return db.payment.findUnique({ where: { providerTransactionId }, select: { userId: true } });
  }
}
