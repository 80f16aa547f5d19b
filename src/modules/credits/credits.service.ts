import { Injectable } from '@nestjs/common';
import { InsufficientCreditsError, NotFoundError } from '../../common/errors/app-error.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import type { CreditTransaction } from '../../generated/prisma/client.js';
import { CreditsRepository, type LedgerRow } from './credits.repository.js';

/** Ledger kinds; UNIQUE(job_id, kind) makes every (job, kind) pair happen at most once. */
export const CREDIT_KINDS = {
  grant: 'grant',
  spend: 'spend',
  refund: 'refund',
  adjustment: 'adjustment',
} as const;

export interface LedgerInput {
  userId: string;
  /** Positive number of credits. */
  amount: number;
  /** Idempotency key: the billing event id, the transaction id, the metered request id, ... */
  jobId: string;
  kind?: string;
  details?: LedgerRow['details'];
}

export interface LedgerResult {
  transaction: CreditTransaction;
  /** false when this (job_id, kind) was already recorded: a redelivery, nothing changed. */
  applied: boolean;
  balance: number;
}

/**
 * The credit ledger. Balance = sum of delta over the user's rows; users.credit_balance caches it and is
 * updated in the same statement as each insert, under the user-row lock, so it is O(1) to read.
 */
@Injectable()
export class CreditsService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly ledger: CreditsRepository,
  ) {}

  balance(userId: string): Promise<number> {
    return this.ledger.balance(this.prisma, userId);
  }

  /** Adds credits (grant, refund, positive adjustment) inside the caller's transaction; idempotent. */
  async grant(tx: Tx, input: LedgerInput): Promise<LedgerResult> {
    return this.apply(tx, input, input.kind ?? CREDIT_KINDS.grant, Math.abs(input.amount), false);
  }

  /**
   * The spec's four steps: lock the user row until the caller's transaction ends, compute the balance,
   * refuse when it does not cover the spend (402), insert the negative row. A redelivery with the same
   * (job_id, kind) returns the first result and deducts nothing.
   */
  async deduct(tx: Tx, input: LedgerInput): Promise<LedgerResult> {
    return this.apply(tx, input, input.kind ?? CREDIT_KINDS.spend, -Math.abs(input.amount), true);
  }

  private async apply(
    tx: Tx,
    input: LedgerInput,
    kind: string,
    delta: number,
    mustCover: boolean,
  ): Promise<LedgerResult> {
    if (!Number.isInteger(delta)) throw new Error('credit amounts are whole numbers');
    const balance = await this.ledger.lockBalance(tx, input.userId);
    if (balance === null) throw new NotFoundError('The user does not exist.', 'user_not_found');
    // Checked under the lock: a concurrent redelivery has either committed (found) or waits for us.
    const existing = await this.ledger.findByJob(tx, input.jobId, kind);
    if (existing) return { transaction: existing, applied: false, balance };
    if (mustCover && balance + delta < 0) {
      throw new InsufficientCreditsError(undefined, { balance, required: -delta });
    }
    const transaction = await this.ledger.insertAndApply(tx, {
      userId: input.userId,
      delta,
      kind,
      jobId: input.jobId,
      details: input.details,
    });
    if (!transaction) {
      // Same (job_id, kind) committed for another user's lock in between: a redelivery all the same.
      const first = await this.ledger.findByJob(tx, input.jobId, kind);
      return { transaction: first!, applied: false, balance };
    }
    return { transaction, applied: true, balance: balance + delta };
  }
}
