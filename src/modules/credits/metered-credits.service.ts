import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import type { CreditTransaction } from '../../generated/prisma/client.js';
import { CreditsRepository, type LedgerDetails } from './credits.repository.js';
import { CREDIT_KINDS, CreditsService } from './credits.service.js';

export interface ReserveInput {
  userId: string;
  /** Credits to hold: an upper bound of what the call can cost. */
  amount: number;
  jobId: string;
  details?: LedgerDetails;
}

export type Reservation =
  | { applied: true; spend: CreditTransaction; balance: number }
  /** The job was reserved before (a retried request): nothing was deducted this time. */
  | { applied: false; spend: CreditTransaction; state: 'in_progress' | 'settled' | 'refunded' };

export interface Settlement {
  reserved: number;
  charged: number;
}

/**
 * Credits for a metered call, in three short transactions around the slow provider call: reserve (the
 * `spend` row and its hold, committed before the call), then settle (success) or refund (failure). The
 * hold is the claim that makes settle, refund and the reconciler mutually exclusive: whoever deletes it
 * writes the closing row, everyone else does nothing.
 */
@Injectable()
export class MeteredCreditsService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly credits: CreditsService,
    private readonly ledger: CreditsRepository,
    private readonly uow: UnitOfWork,
  ) {}

  /**
   * Deducts the reservation (402 when not covered) and opens its hold: one statement, committed together.
   * Not a spend for the low-balance rule: the settle decides that on the real cost.
   */
  async reserve(input: ReserveInput): Promise<Reservation> {
    const result = await this.credits.deductStandalone(
      { ...input, kind: CREDIT_KINDS.spend },
      { hold: true },
    );
    if (result.applied) return { applied: true, spend: result.transaction, balance: result.balance };
    return { applied: false, spend: result.transaction, state: await this.state(input.jobId) };
  }

  /**
   * Charges the real cost: gives back the unused part of the reservation as a `settle` row (0 when the
   * estimate was exact). Never charges more than was reserved, so the balance cannot go negative. null
   * when the hold was already closed (the reconciler refunded a call that took too long). A unit of work:
   * the charge is the call's real spend, and a low-balance alert it causes is written to the same outbox
   * transaction, pushed after commit without the call waiting for Redis.
   */
  settle(jobId: string, actualCost: number): Promise<Settlement | null> {
    return this.uow.run(
      async (tx) => {
        const hold = await this.ledger.take(tx, jobId);
        if (!hold) return null;
        const charged = Math.min(Math.max(0, Math.ceil(actualCost)), hold.amount);
        // The charge is taken from plan credits first; what the reservation took from purchased credits
        // and the charge did not use goes back to them.
        const purchasedShare = Math.min(hold.purchased, hold.amount - charged);
        await this.credits.settle(tx, {
          userId: hold.userId,
          amount: hold.amount - charged,
          charged,
          jobId,
          details: { reserved: hold.amount, charged },
          purchasedShare,
        });
        await this.credits.expireReturned(tx, {
          userId: hold.userId,
          jobId,
          reservedUnder: hold.planJobId,
          returnedPlan: hold.amount - charged - purchasedShare,
        });
        return { reserved: hold.amount, charged };
      },
      { afterCommit: 'background' },
    );
  }

  /** Gives the whole reservation back (kind `refund`). Returns the credits refunded, null when already closed. */
  refund(jobId: string, reason: string, olderThanMs?: number): Promise<number | null> {
    return this.prisma.$transaction(async (tx) => {
      const hold = await this.ledger.take(tx, jobId, olderThanMs);
      if (!hold) return null;
      await this.credits.grant(tx, {
        userId: hold.userId,
        amount: hold.amount,
        jobId,
        kind: CREDIT_KINDS.refund,
        details: { reason },
        purchasedShare: hold.purchased,
      });
      await this.credits.expireReturned(tx, {
        userId: hold.userId,
        jobId,
        reservedUnder: hold.planJobId,
        returnedPlan: hold.amount - hold.purchased,
      });
      return hold.amount;
    });
  }

  /** Where a reserved job stands: still held, or closed by a settle or a refund. */
  async state(jobId: string): Promise<'in_progress' | 'settled' | 'refunded'> {
    if (await this.ledger.findHold(this.prisma, jobId)) return 'in_progress';
    const settled = await this.ledger.findByJob(this.prisma, jobId, CREDIT_KINDS.settle);
    return settled ? 'settled' : 'refunded';
  }
}
