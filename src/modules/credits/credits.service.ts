import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { Injectable } from '@nestjs/common';
import { ConflictError, InsufficientCreditsError, NotFoundError } from '../../common/errors/app-error.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { type CreditTransaction, Prisma } from '../../generated/prisma/client.js';
import { CreditsRepository, type LedgerDetails } from './credits.repository.js';

/**
 * Ledger kinds; UNIQUE(job_id, kind) makes every (job, kind) pair happen at most once. A metered call
 * writes `spend` (the reservation) and then exactly one of `settle` (the unused part of the reservation
 * back, possibly 0) or `refund` (all of it back), all under the same job id.
 */
export const CREDIT_KINDS = {
  grant: 'grant',
  spend: 'spend',
  refund: 'refund',
  adjustment: 'adjustment',
  settle: 'settle',
} as const;

/** users.credit_balance and credit_transactions.delta are PostgreSQL integers. */
const MAX_AMOUNT = 2_147_483_647;

export interface LedgerInput {
  userId: string;
  /** Credits, a whole number >= 0 (the sign comes from grant/deduct). */
  amount: number;
  /** Idempotency key: the billing event id, the transaction id, the metered request id, ... */
  jobId: string;
  kind?: string;
  details?: LedgerDetails;
}

export interface LedgerResult {
  transaction: CreditTransaction;
  /** false when this (job_id, kind) was already recorded: a redelivery, nothing changed. */
  applied: boolean;
  balance: number;
}

export interface LedgerPage {
  balance: number;
  items: CreditTransaction[];
  total: number;
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
    private readonly metrics: MetricsService,
  ) {}

  balance(userId: string): Promise<number> {
    return this.ledger.balance(this.prisma, userId);
  }

  /**
   * The user's rows, newest first, with the balance. One REPEATABLE READ transaction: every read sees the
   * same snapshot, so a grant or spend committed in between cannot show a balance that the rows and the
   * total do not explain.
   */
  history(userId: string, page: number, pageSize: number): Promise<LedgerPage> {
    return this.prisma.$transaction(
      async (tx) => {
        const balance = await this.ledger.balance(tx, userId);
        const { items, total } = await this.ledger.page(tx, userId, (page - 1) * pageSize, pageSize);
        return { balance, items, total };
      },
      { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead },
    );
  }

  /** Adds credits (grant, refund, settle, positive adjustment) inside the caller's transaction; idempotent. */
  grant(tx: Tx, input: LedgerInput): Promise<LedgerResult> {
    return this.apply(tx, input, input.kind ?? CREDIT_KINDS.grant, 1, false);
  }

  /**
   * The spec's four steps: lock the user row until the transaction ends, compute the balance, refuse when
   * it does not cover the spend (402), insert the negative row. A redelivery with the same (job_id, kind)
   * returns the first result and deducts nothing. `tx` null: the deduction is its own transaction (one
   * statement); `hold` then also opens the metered call's reservation in that statement.
   */
  deduct(tx: Tx | null, input: LedgerInput, options: { hold?: boolean } = {}): Promise<LedgerResult> {
    if (options.hold && tx)
      throw new Error('a hold is opened only by a deduction that is its own transaction');
    return this.apply(tx, input, input.kind ?? CREDIT_KINDS.spend, -1, true, options.hold);
  }

  private async apply(
    tx: Tx | null,
    input: LedgerInput,
    kind: string,
    sign: 1 | -1,
    mustCover: boolean,
    hold = false,
  ): Promise<LedgerResult> {
    // A negative amount is a caller bug; silently flipping its sign would credit a claw-back.
    if (!Number.isSafeInteger(input.amount) || input.amount < 0 || input.amount > MAX_AMOUNT) {
      throw new RangeError(`credit amounts are whole numbers from 0 to ${MAX_AMOUNT}, got ${input.amount}`);
    }
    if (!input.jobId || !kind) throw new RangeError('a ledger row needs a job id and a kind');
    const delta = sign * input.amount;
    const write = {
      userId: input.userId,
      delta,
      kind,
      jobId: input.jobId,
      details: input.details,
      mustCover,
      hold: hold ? input.amount : undefined,
    };
    const result = tx ? await this.ledger.apply(tx, write) : await this.ledger.applyAlone(write);

    if (result.outcome === 'inserted') {
      // Counted before commit: a rolled-back caller over-counts, which a rate metric tolerates.
      this.metrics.credits.inc({ kind }, input.amount);
      return { transaction: result.row!, applied: true, balance: result.balance! };
    }
    if (result.balance === null) throw new NotFoundError('The user does not exist.', 'user_not_found');
    // Nothing inserted and nothing seen: either not covered, or a concurrent writer of the same
    // (job_id, kind) committed while this statement waited (for the user lock, or on the unique key
    // for another user's row), after its snapshot was taken. Look again: a redelivery is never refused.
    const existing = result.row ?? (await this.ledger.findByJob(tx ?? this.prisma, input.jobId, kind));
    if (existing) {
      if (existing.userId !== input.userId) {
        throw new ConflictError(
          `Job ${input.jobId} is already recorded for another user.`,
          'credit_job_conflict',
        );
      }
      return { transaction: existing, applied: false, balance: result.balance };
    }
    if (mustCover && result.balance + delta < 0) {
      throw new InsufficientCreditsError(undefined, { balance: result.balance, required: input.amount });
    }
    throw new Error(`ledger insert for job ${input.jobId} neither happened nor conflicted`);
  }
}
