import { Injectable } from '@nestjs/common';
import { type Db, driverOf, type Tx } from '../../../infra/prisma/prisma.service.js';

/**
 * Paddle's transaction origins (`TransactionOrigin` in paddle-node-sdk: `api`, `subscription_charge`,
 * `subscription_payment_method_change`, `subscription_recurring`, `subscription_update`, `web`) that only
 * an existing subscription makes: a renewal, a proration or other change, a one-off charge, a payment
 * method update. None of them is a subscription's first payment; `web` (checkout) and `api` can be, and
 * so can a payment recorded without an origin.
 */
export const NOT_FIRST_ORIGINS = [
  'subscription_recurring',
  'subscription_update',
  'subscription_charge',
  'subscription_payment_method_change',
] as const;

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
  /** The provider's type (Paddle: `full` | `partial`); null when the event has none. */
  type: string | null;
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
  /**
   * The first record of a transaction is kept: a repeat (a replay under a new event id, or a forged one
   * signed with a leaked secret) never rewrites the amount, currency or date revenue is computed from. It
   * only fills what was unknown: the owner, and the tier of a price configured since.
   */
  async upsertPayment(tx: Tx, record: PaymentRecord) {
    const { providerTransactionId } = record;
    const { count: inserted } = await tx.payment.createMany({ data: [record], skipDuplicates: true });
    const row = await tx.payment.findUniqueOrThrow({ where: { providerTransactionId } });
    if ((row.userId === null && record.userId) || (row.tier === null && record.tier)) {
      const updated = await tx.payment.update({
        where: { providerTransactionId },
        data: { userId: row.userId ?? record.userId, tier: row.tier ?? record.tier },
      });
      if (row.userId === null && updated.userId) {
        await this.linkAdjustments(tx, providerTransactionId, updated.userId);
      }
      return updated;
    }
    // A refund recorded before its payment had no owner to take: it gets the payment's now.
    if (inserted > 0 && row.userId) await this.linkAdjustments(tx, providerTransactionId, row.userId);
    return row;
  }

  /** Completed renewals of one subscription, oldest first. */
  renewalsOf(db: Db, providerSubscriptionId: string, origin: string) {
    return db.payment.findMany({
      where: { providerSubscriptionId, origin, status: 'completed' },
      orderBy: [{ occurredAt: 'asc' }, { providerTransactionId: 'asc' }],
    });
  }

  /**
   * Payments that arrived before their subscription was known get their owner when it is, and so do the
   * adjustments (refunds, chargebacks) of the subscription's payments recorded without one: the account
   * export and the audits find a user's adjustments by `user_id`.
   */
  async linkPaymentsToUser(tx: Tx, providerSubscriptionId: string, userId: string): Promise<number> {
    const result = await tx.payment.updateMany({
      where: { providerSubscriptionId, userId: null },
      data: { userId },
    });
    // Raw: Prisma's @updatedAt would overwrite updated_at, the provider's, which orders adjustment events.
    await tx.$executeRaw`
      UPDATE billing_adjustments a SET user_id = ${userId}::uuid
      FROM payments p
      WHERE p.provider_subscription_id = ${providerSubscriptionId} AND p.user_id = ${userId}::uuid
        AND a.provider_transaction_id = p.provider_transaction_id AND a.user_id IS NULL`;
    return result.count;
  }

  /** Adjustments of a transaction recorded without an owner get its payment's (see linkPaymentsToUser). */
  private async linkAdjustments(tx: Tx, providerTransactionId: string, userId: string): Promise<void> {
    await tx.$executeRaw`
      UPDATE billing_adjustments SET user_id = ${userId}::uuid
      WHERE provider_transaction_id = ${providerTransactionId} AND user_id IS NULL`;
  }

  /**
   * Insert, or update when this event is at least as new as the stored one; returns the row id and what its
   * claw-back took if it already ran (`clawedBackCredits`, null when it never did).
   */
  async upsertAdjustment(
    tx: Tx,
    record: AdjustmentRecord,
  ): Promise<{ id: string; applied: boolean; clawedBackCredits: number | null }> {
    const rows = await tx.$queryRaw<{ id: string; clawed_back_credits: number | null }[]>`
      INSERT INTO billing_adjustments (id, user_id, provider_adjustment_id, provider_transaction_id, action,
        type, status, amount_total, currency, occurred_at, updated_at)
      VALUES (gen_random_uuid(), ${record.userId}::uuid, ${record.providerAdjustmentId},
        ${record.providerTransactionId}, ${record.action}, ${record.type}, ${record.status}, ${record.amountTotal},
        ${record.currency}, ${record.occurredAt}, ${record.updatedAt})
      ON CONFLICT (provider_adjustment_id) DO UPDATE SET
        status = EXCLUDED.status, action = EXCLUDED.action, amount_total = EXCLUDED.amount_total,
        type = COALESCE(EXCLUDED.type, billing_adjustments.type),
        currency = EXCLUDED.currency, updated_at = EXCLUDED.updated_at,
        user_id = COALESCE(billing_adjustments.user_id, EXCLUDED.user_id),
        provider_transaction_id = COALESCE(EXCLUDED.provider_transaction_id, billing_adjustments.provider_transaction_id)
      WHERE billing_adjustments.updated_at <= EXCLUDED.updated_at
      RETURNING id, clawed_back_credits`;
    if (rows.length > 0) {
      return { id: rows[0].id, applied: true, clawedBackCredits: rows[0].clawed_back_credits };
    }
    const existing = await tx.billingAdjustment.findUniqueOrThrow({
      where: { providerAdjustmentId: record.providerAdjustmentId },
      select: { id: true, clawedBackCredits: true },
    });
    return { id: existing.id, applied: false, clawedBackCredits: existing.clawedBackCredits };
  }

  /**
   * What the claw-back of an adjustment took (0: nothing was left), written once it ran: it never runs
   * again for that adjustment, also when it took nothing and so wrote no ledger row.
   */
  async recordClawBack(tx: Tx, id: string, credits: number): Promise<void> {
    // Raw: Prisma's @updatedAt would overwrite updated_at, the provider's, which orders adjustment events.
    await tx.$executeRaw`UPDATE billing_adjustments SET clawed_back_credits = ${credits} WHERE id = ${id}::uuid`;
  }

  /**
   * What the restore of a won chargeback (an approved `chargeback_reverse`) gave back (0: nothing was due),
   * written once it ran: it never runs again under that reverse.
   */
  async recordRestore(tx: Tx, id: string, credits: number): Promise<void> {
    // Raw: Prisma's @updatedAt would overwrite updated_at, the provider's, which orders adjustment events.
    await tx.$executeRaw`UPDATE billing_adjustments SET restored_credits = ${credits} WHERE id = ${id}::uuid`;
  }

  /**
   * The claw-back lock of one provider transaction, held until the caller's transaction ends: an approved
   * refund or chargeback of it and every event that grants what it paid for (its transaction.completed, a
   * pack's or a renewal's) take it before they read the other's rows, so the one applied second sees what the
   * first committed (decision "claw-back serialization"). An advisory lock, because neither the payment nor
   * the adjustment row may exist yet. Taken after the subscription's lock and before any user row's.
   */
  async lockTransaction(tx: Tx, providerTransactionId: string): Promise<void> {
    await driverOf(tx).query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
      `billing-transaction:${providerTransactionId}`,
    ]);
  }

  findPayment(db: Db, providerTransactionId: string) {
    return db.payment.findUnique({ where: { providerTransactionId } });
  }

  /**
   * The subscription's first payment (the one subscription.created granted the first period for): its
   * earliest recorded payment of an origin that can open a subscription (NOT_FIRST_ORIGINS), or null while
   * none is recorded. A proration or one-off charge recorded before the first payment's webhook arrived is
   * never taken for it: its refund took the first period's grant back (until 2026-12-07).
   */
  firstPaymentOf(db: Db, providerSubscriptionId: string) {
    return db.payment.findFirst({
      where: {
        providerSubscriptionId,
        OR: [{ origin: null }, { origin: { notIn: [...NOT_FIRST_ORIGINS] } }],
      },
      orderBy: [{ occurredAt: 'asc' }, { providerTransactionId: 'asc' }],
    });
  }

  /**
   * A subscription's payments of some money that pay a billing period (its first payment, `firstTransactionId`,
   * or one of origin `periodOrigin`, a renewal), recorded within `toleranceMs` of `at`: the candidates for the
   * payment that opened the billing period starting at `at`, oldest first.
   */
  periodPaymentsNear(
    db: Db,
    providerSubscriptionId: string,
    at: Date,
    toleranceMs: number,
    pays: { firstTransactionId: string | null; periodOrigin: string },
  ) {
    return this.periodPaymentsBetween(
      db,
      providerSubscriptionId,
      new Date(at.getTime() - toleranceMs),
      new Date(at.getTime() + toleranceMs),
      pays,
    );
  }

  /** The subscription's payments that pay a period (see periodPaymentsNear) made from `from` to `to`. */
  periodPaymentsBetween(
    db: Db,
    providerSubscriptionId: string,
    from: Date,
    to: Date,
    pays: { firstTransactionId: string | null; periodOrigin: string },
  ) {
    return db.payment.findMany({
      where: {
        providerSubscriptionId,
        amountTotal: { gt: 0 },
        OR: [
          { origin: pays.periodOrigin },
          ...(pays.firstTransactionId ? [{ providerTransactionId: pays.firstTransactionId }] : []),
        ],
        occurredAt: { gte: from, lte: to },
      },
      orderBy: [{ occurredAt: 'asc' }, { providerTransactionId: 'asc' }],
    });
  }

  /** Adjustments of one transaction with these actions, whatever their status, oldest first. */
  adjustmentsOf(db: Db, providerTransactionId: string, actions: string[]) {
    return db.billingAdjustment.findMany({
      where: { providerTransactionId, action: { in: actions } },
      orderBy: [{ occurredAt: 'asc' }, { providerAdjustmentId: 'asc' }],
    });
  }

  /** Approved adjustments of one transaction with these actions (a refund that arrived before its grants). */
  approvedAdjustmentsOf(db: Db, providerTransactionId: string, actions: string[]) {
    return db.billingAdjustment.findMany({
      where: { providerTransactionId, status: 'approved', action: { in: actions } },
      orderBy: [{ occurredAt: 'asc' }, { providerAdjustmentId: 'asc' }],
    });
  }

  findPaymentOwner(db: Db, providerTransactionId: string) {
    return db.payment.findUnique({ where: { providerTransactionId }, select: { userId: true } });
  }
}
