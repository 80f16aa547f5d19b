import { Injectable } from '@nestjs/common';
import { type Db, PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import type { CreditHold, CreditTransaction } from '../../generated/prisma/client.js';
import type { PlanSubscription } from './credit-summary.js';

export type LedgerDetails = Record<string, string | number | boolean | null>;

export interface LedgerRow {
  userId: string;
  delta: number;
  kind: string;
  jobId: string;
  details?: LedgerDetails;
}

interface RawLedgerRow {
  inserted: boolean;
  id: string;
  user_id: string;
  delta: number;
  kind: string;
  job_id: string;
  details: unknown;
  created_at: Date;
  balance: number | null;
}

const toTransaction = (raw: RawLedgerRow): CreditTransaction => ({
  id: raw.id,
  userId: raw.user_id,
  delta: raw.delta,
  kind: raw.kind,
  jobId: raw.job_id,
  details: raw.details as CreditTransaction['details'],
  createdAt: raw.created_at,
});

/**
 * The spec's deduction in one statement: lock the user row (FOR UPDATE: until the transaction the
 * statement runs in ends), read the cached balance, insert the row only when it is covered (or when
 * covering is not required: grants) and no row exists for (job_id, kind), and move the cached balance by
 * the same delta, so the two never disagree. With $8 an open reservation (credit_holds) is written too,
 * naming the plan allowance that opened the user's current plan credits (plan_job_id).
 * Outcome: `inserted`, `existing` (that (job_id, kind) was recorded before: a redelivery), or `none`
 * (not covered, no such user, or a concurrent insert of the same (job_id, kind) that this statement's
 * snapshot could not see: the caller looks again).
 *
 * The statement's snapshot predates the lock wait, so `existing` can miss a row that the lock holder just
 * committed; ON CONFLICT then does nothing and the caller's second look finds it. The balance is read
 * through the lock, which always returns the newest row version.
 *
 * The same UPDATE keeps users.purchased_credits (the pack-bought part of the balance, issue 18): plan
 * credits are spent first, so a negative row leaves it at min(purchased, new balance) ($10: a claw-back of
 * a purchase takes from it first instead); a positive row adds its purchased share $9 (a purchase: all of
 * it; a settle or refund: what the reservation took from purchased credits, recorded on its hold). It
 * never exceeds a positive balance and is never negative, so plan credits = balance - purchased.
 */
const APPLY_SQL = `
  WITH locked AS (
    SELECT id, credit_balance, purchased_credits, current_tier, plan_grant_job_id,
      COALESCE(plan_period_job_id, plan_grant_job_id) AS plan_period_job_id
    FROM users WHERE id = $1::uuid FOR UPDATE
  ), existing AS (
    SELECT id, user_id, delta, kind, job_id, details, created_at
    FROM credit_transactions WHERE job_id = $4 AND kind = $3
  ), ins AS (
    INSERT INTO credit_transactions (id, user_id, delta, kind, job_id, details)
    SELECT gen_random_uuid(), locked.id, $2::int, $3, $4, $5::jsonb FROM locked
    WHERE NOT EXISTS (SELECT 1 FROM existing)
      AND (NOT $6::boolean OR locked.credit_balance + $2::int >= 0)
    ON CONFLICT (job_id, kind) DO NOTHING
    RETURNING id, user_id, delta, kind, job_id, details, created_at
  ), upd AS (
    UPDATE users SET credit_balance = users.credit_balance + ins.delta,
      purchased_credits = GREATEST(0, LEAST(
        CASE WHEN ins.delta >= 0 THEN users.purchased_credits + $9::int
             WHEN $10::boolean THEN users.purchased_credits + ins.delta
             ELSE users.purchased_credits END,
        users.credit_balance + ins.delta))
    FROM ins WHERE users.id = ins.user_id
    RETURNING users.credit_balance, users.purchased_credits
  ), hold AS (
    INSERT INTO credit_holds (job_id, user_id, amount, purchased, plan_job_id)
    SELECT ins.job_id, ins.user_id, $7::int,
      (SELECT purchased_credits FROM locked) - (SELECT purchased_credits FROM upd),
      (SELECT plan_period_job_id FROM locked)
    FROM ins WHERE $8::boolean
  )
  SELECT 'inserted' AS outcome, ins.*, (SELECT credit_balance FROM upd) AS balance,
    (SELECT purchased_credits FROM upd) AS purchased, (SELECT current_tier FROM locked) AS tier,
    (SELECT plan_grant_job_id FROM locked) AS plan_job_id FROM ins
  UNION ALL
  SELECT 'existing', existing.*, locked.credit_balance, locked.purchased_credits, locked.current_tier,
    locked.plan_grant_job_id FROM existing LEFT JOIN locked ON true
  UNION ALL
  SELECT 'none', NULL, NULL, NULL, NULL, NULL, NULL, NULL, locked.credit_balance, locked.purchased_credits,
    locked.current_tier, locked.plan_grant_job_id
  FROM (SELECT 1) AS one LEFT JOIN locked ON true
  WHERE NOT EXISTS (SELECT 1 FROM ins) AND NOT EXISTS (SELECT 1 FROM existing)`;

interface RawApplyRow extends Omit<RawLedgerRow, 'inserted'> {
  outcome: 'inserted' | 'existing' | 'none';
  purchased: number | null;
  tier: string | null;
  plan_job_id: string | null;
}

export interface ApplyOutcome {
  outcome: 'inserted' | 'existing' | 'none';
  /** The inserted row, or the one recorded before for (job_id, kind). */
  row: CreditTransaction | null;
  /** After the insert when inserted; otherwise the locked balance; null when the user does not exist. */
  balance: number | null;
  /** users.purchased_credits at the same moment as balance. */
  purchased: number;
  /** The user's tier and current plan allowance (low-balance alerts). */
  tier: string | null;
  planJobId: string | null;
}

export interface ApplyInput extends LedgerRow {
  /** Refuse (outcome `none`) when the balance would go negative. */
  mustCover: boolean;
  /** Also open a reservation of this many credits for the job (metered calls). */
  hold?: number;
  /** Positive rows: how much of delta is purchased credits (0 for plan grants). */
  purchasedShare?: number;
  /** Negative rows: take from purchased credits first (the claw-back of a purchase). */
  purchasedFirst?: boolean;
}

@Injectable()
export class CreditsRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** One ledger write inside the caller's transaction: the user row stays locked until it ends. */
  async apply(tx: Tx, input: ApplyInput): Promise<ApplyOutcome> {
    return toOutcome(await tx.$queryRawUnsafe<RawApplyRow[]>(APPLY_SQL, ...applyParams(input)));
  }

  /**
   * The same write as its own transaction: one statement on the pool, no BEGIN/COMMIT round trips and
   * none of Prisma's per-query work (a metered call's reservation, the hottest write of the service).
   */
  async applyAlone(input: ApplyInput): Promise<ApplyOutcome> {
    return toOutcome((await this.prisma.pool.query<RawApplyRow>(APPLY_SQL, applyParams(input))).rows);
  }

  findByJob(db: Db, jobId: string, kind: string): Promise<CreditTransaction | null> {
    return db.creditTransaction.findUnique({ where: { jobId_kind: { jobId, kind } } });
  }

  async balance(db: Db, userId: string): Promise<number> {
    const user = await db.user.findUnique({ where: { id: userId }, select: { creditBalance: true } });
    return user?.creditBalance ?? 0;
  }

  /** The cached balance, its purchased part and the current plan allowance. */
  async planState(db: Db, userId: string) {
    const user = await db.user.findUnique({
      where: { id: userId },
      select: {
        creditBalance: true,
        purchasedCredits: true,
        planGrantJobId: true,
        planGrantStartsAt: true,
        planExpiresAt: true,
        planCarriedCredits: true,
        planPeriodJobId: true,
        currentTier: true,
      },
    });
    if (!user) return null;
    return {
      balance: user.creditBalance,
      purchased: user.purchasedCredits,
      planJobId: user.planGrantJobId,
      planStartsAt: user.planGrantStartsAt,
      planExpiresAt: user.planExpiresAt,
      planCarried: user.planCarriedCredits ?? 0,
      /** The allowance that opened the current plan credits (see the schema); older rows: the current one. */
      planPeriod: user.planPeriodJobId ?? user.planGrantJobId,
      currentTier: user.currentTier,
    };
  }

  /**
   * The user's subscriptions that are not expired, as far as the allowance after the current one goes
   * (credit-summary.ts, allowanceFollows). Billing writes them; the ledger only reads them here.
   */
  planSubscriptions(db: Db, userId: string): Promise<PlanSubscription[]> {
    return db.subscription.findMany({
      where: { userId, expiredAt: null },
      select: {
        status: true,
        expiredAt: true,
        currentPeriodEnd: true,
        billingInterval: true,
        billingFrequency: true,
        scheduledChange: true,
      },
    });
  }

  /** Locks the user row until the transaction ends (a read-then-write of the ledger that must not race). */
  async lockUser(tx: Tx, userId: string): Promise<boolean> {
    const rows = await tx.$queryRaw<
      { id: string }[]
    >`SELECT id FROM users WHERE id = ${userId}::uuid FOR UPDATE`;
    return rows.length > 0;
  }

  /**
   * Lets this transaction take a balance below zero (a claw-back): the database guard refuses a negative
   * balance otherwise (see the credit_lifecycle migration). Lasts until the transaction ends.
   */
  async allowNegative(tx: Tx): Promise<void> {
    await tx.$queryRaw`SELECT set_config('credits.allow_negative', 'on', true)`;
  }

  /** Ledger rows of these job ids and kinds (grants a claw-back may take back). */
  rowsOf(db: Db, jobIds: string[], kinds: string[]): Promise<CreditTransaction[]> {
    return db.creditTransaction.findMany({ where: { jobId: { in: jobIds }, kind: { in: kinds } } });
  }

  /** A user's monthly-allowance grants of one subscription (`allowance:<subscription id>:...`). */
  async allowanceGrantsOf(db: Db, userId: string, providerSubscriptionId: string): Promise<string[]> {
    const rows = await db.$queryRaw<{ job_id: string }[]>`
      SELECT job_id FROM credit_transactions
      WHERE user_id = ${userId}::uuid AND kind = 'grant'
        AND starts_with(job_id, ${`allowance:${providerSubscriptionId}:`})`;
    return rows.map((row) => row.job_id);
  }

  /**
   * Credits already clawed back for one billing transaction (earlier partial refunds), net of what won
   * chargebacks gave back (their `clawback` rows are positive).
   */
  async clawedBackFor(db: Db, userId: string, transactionId: string): Promise<number> {
    const rows = await db.$queryRaw<{ sum: bigint | null }[]>`
      SELECT SUM(-delta)::bigint AS sum FROM credit_transactions
      WHERE user_id = ${userId}::uuid AND kind = 'clawback' AND details->>'transaction_id' = ${transactionId}`;
    return Number(rows[0]?.sum ?? 0);
  }

  /**
   * What won chargebacks of one billing transaction gave back so far (its positive `clawback` rows): the
   * credits, and the part of them given back as purchased credits (their details' `purchased`).
   */
  async restoredFor(
    db: Db,
    userId: string,
    transactionId: string,
  ): Promise<{ credits: number; purchased: number }> {
    const rows = await db.$queryRaw<{ credits: bigint | null; purchased: bigint | null }[]>`
      SELECT SUM(delta)::bigint AS credits,
        SUM(CASE WHEN jsonb_typeof(details->'purchased') = 'number' THEN (details->>'purchased')::bigint END)::bigint
          AS purchased
      FROM credit_transactions
      WHERE user_id = ${userId}::uuid AND kind = 'clawback' AND delta > 0
        AND details->>'transaction_id' = ${transactionId}`;
    return { credits: Number(rows[0]?.credits ?? 0), purchased: Number(rows[0]?.purchased ?? 0) };
  }

  /** Whether a rollover rule expired any of the user's plan credits after `after` (an `expiry` row since). */
  async expiredSince(db: Db, userId: string, after: Date): Promise<boolean> {
    const row = await db.creditTransaction.findFirst({
      where: { userId, kind: 'expiry', createdAt: { gt: after } },
      select: { id: true },
    });
    return row !== null;
  }

  /**
   * The user's current plan allowance (written under the user-row lock the grant took) and the plan credits
   * it carried over from the allowance it closed.
   */
  async setPlan(
    tx: Tx,
    userId: string,
    plan: { jobId: string; startsAt: Date; expiresAt: Date | null; carried: number; period: string },
  ) {
    await tx.user.update({
      where: { id: userId },
      data: {
        planGrantJobId: plan.jobId,
        planGrantStartsAt: plan.startsAt,
        planExpiresAt: plan.expiresAt,
        planCarriedCredits: plan.carried,
        planPeriodJobId: plan.period,
      },
    });
  }

  /**
   * Moves what the closed allowance left (users.plan_carried_credits, signed): up by plan credits a
   * reservation gives back after the close, down by what a claw-back took of credits still held.
   */
  async addCarried(tx: Tx, userId: string, credits: number) {
    await tx.$executeRaw`
      UPDATE users SET plan_carried_credits = COALESCE(plan_carried_credits, 0) + ${credits}::int
      WHERE id = ${userId}::uuid`;
  }

  /** The user's open reservations (metered calls in flight): their job ids, credits and purchased part. */
  async openHoldsOf(db: Db, userId: string): Promise<{ jobId: string; amount: number; purchased: number }[]> {
    const rows = await db.creditHold.findMany({
      where: { userId },
      select: { jobId: true, amount: true, purchased: true },
      orderBy: { createdAt: 'asc' },
    });
    return rows;
  }

  /**
   * Plan credits the user's open reservations made under the allowances `allowanceJobIds` hold (their
   * amount less the purchased part).
   */
  async heldUnder(db: Db, userId: string, allowanceJobIds: string[]): Promise<number> {
    if (allowanceJobIds.length === 0) return 0;
    const rows = await db.$queryRaw<{ sum: bigint | null }[]>`
      SELECT SUM(amount - purchased)::bigint AS sum FROM credit_holds
      WHERE user_id = ${userId}::uuid AND plan_job_id = ANY(${allowanceJobIds}::text[])`;
    return Number(rows[0]?.sum ?? 0);
  }

  /**
   * A user's late `expiry` rows (a reservation's plan credits given back after its allowance closed) of
   * these allowances; keyed on the calls' job ids, found through the user's index.
   */
  lateExpiriesOf(db: Db, userId: string, allowanceJobIds: string[]): Promise<CreditTransaction[]> {
    if (allowanceJobIds.length === 0) return Promise.resolve([]);
    return db.creditTransaction.findMany({
      where: {
        userId,
        kind: 'expiry',
        OR: allowanceJobIds.map((jobId) => ({ details: { path: ['allowance'], equals: jobId } })),
      },
    });
  }

  /** The spec's definition (sum of deltas); the cached column must always equal it. */
  async sumOfDeltas(db: Db, userId: string): Promise<number> {
    const rows = await db.$queryRaw<{ sum: bigint | null }[]>`
      SELECT SUM(delta)::bigint AS sum FROM credit_transactions WHERE user_id = ${userId}::uuid`;
    return Number(rows[0]?.sum ?? 0);
  }

  /** The caller's ledger, newest first (index on (user_id, created_at)). */
  async page(
    db: Db,
    userId: string,
    skip: number,
    take: number,
  ): Promise<{ items: CreditTransaction[]; total: number }> {
    // Sequential: inside a transaction the two share one connection anyway.
    const items = await db.creditTransaction.findMany({
      where: { userId },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      skip,
      take,
    });
    const total = await db.creditTransaction.count({ where: { userId } });
    return { items, total };
  }

  /* Open reservations (credit_holds): inserted by APPLY_SQL with the debit, closed here. */
  findHold(db: Db, jobId: string): Promise<CreditHold | null> {
    return db.creditHold.findUnique({ where: { jobId } });
  }

  /**
   * Deletes the hold and returns it; null when someone else closed it first. The DELETE is the claim:
   * of two transactions closing one hold, the second waits for the first and then finds nothing.
   * `olderThanMs` (database clock) lets the reconciler claim only holds that are really orphaned.
   */
  async take(
    tx: Tx,
    jobId: string,
    olderThanMs?: number,
  ): Promise<{ userId: string; amount: number; purchased: number; planJobId: string | null } | null> {
    type Taken = { user_id: string; amount: number; purchased: number; plan_job_id: string | null };
    const rows =
      olderThanMs === undefined
        ? await tx.$queryRaw<Taken[]>`
            DELETE FROM credit_holds WHERE job_id = ${jobId}
            RETURNING user_id, amount, purchased, plan_job_id`
        : await tx.$queryRaw<Taken[]>`
            DELETE FROM credit_holds
            WHERE job_id = ${jobId} AND created_at < now() - ${olderThanMs}::int * interval '1 millisecond'
            RETURNING user_id, amount, purchased, plan_job_id`;
    return rows.length === 0
      ? null
      : {
          userId: rows[0].user_id,
          amount: rows[0].amount,
          purchased: rows[0].purchased,
          planJobId: rows[0].plan_job_id,
        };
  }

  /**
   * Credits a user's open reservations hold (metered calls in flight, index on (user_id, created_at)):
   * what their settles or refunds will mostly give back. Inside a transaction that deleted a hold, that
   * hold is no longer counted.
   */
  async heldFor(db: Db, userId: string): Promise<number> {
    const rows = await db.$queryRaw<{ sum: bigint | null }[]>`
      SELECT SUM(amount)::bigint AS sum FROM credit_holds WHERE user_id = ${userId}::uuid`;
    return Number(rows[0]?.sum ?? 0);
  }

  /** Oldest holds past the age limit (index on created_at; the table holds only open reservations). */
  async orphans(db: Db, olderThanMs: number, limit: number): Promise<string[]> {
    const rows = await db.$queryRaw<{ job_id: string }[]>`
      SELECT job_id FROM credit_holds
      WHERE created_at < now() - ${olderThanMs}::int * interval '1 millisecond'
      ORDER BY created_at LIMIT ${limit}::int`;
    return rows.map((row) => row.job_id);
  }
}

function applyParams(input: ApplyInput): unknown[] {
  return [
    input.userId,
    input.delta,
    input.kind,
    input.jobId,
    JSON.stringify(input.details ?? {}),
    input.mustCover,
    input.hold ?? 0,
    input.hold !== undefined,
    input.purchasedShare ?? 0,
    input.purchasedFirst ?? false,
  ];
}

function toOutcome(rows: RawApplyRow[]): ApplyOutcome {
  const first = rows[0];
  if (!first) throw new Error('ledger statement returned no row');
  return {
    outcome: first.outcome,
    row:
      first.outcome === 'none' ? null : toTransaction({ ...first, inserted: first.outcome === 'inserted' }),
    balance: first.balance,
    purchased: first.purchased ?? 0,
    tier: first.tier,
    planJobId: first.plan_job_id,
  };
}

/** The ledger statement as text: the bench's plain Express + pg baseline sends exactly this SQL. */
export { APPLY_SQL };
