import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { ConflictError, InsufficientCreditsError, NotFoundError } from '../../common/errors/app-error.js';
import { type PageRequest, pageOffset } from '../../common/paging/paging.js';
import { AppConfig } from '../../config/app-config.js';
import { type Db, PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import { type CreditTransaction, Prisma } from '../../generated/prisma/client.js';
import { type ApplyOutcome, CreditsRepository, type LedgerDetails } from './credits.repository.js';
import { clawBackShare, expiringClawBackShare } from './clawback-share.js';
import { type ClawBackSplit, restorableOf, reversedShare, splitClawBack } from './clawback-restore.js';
import { type CreditSummary, creditSummaryOf } from './credit-summary.js';
import { FREE_TIER } from '../../config/project.config.js';
import { expires, expiringCredits, parseRollover, type RolloverRule } from './rollover.js';

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
  /** A top-up pack, keyed on the billing transaction id; never expires. */
  purchase: 'purchase',
  /** Unspent plan credits a rollover rule removes, keyed on the allowance it closes. */
  expiry: 'expiry',
  /** Credits taken back after a refund or chargeback, keyed on the adjustment id. */
  clawback: 'clawback',
} as const;

/** The e-mail template of the low-balance alert (modules/email/templates/low_balance). */
export const LOW_BALANCE_TEMPLATE = 'low_balance';

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
  /** Positive rows: the part that goes back to purchased credits (a settle or refund of a reservation). */
  purchasedShare?: number;
}

export interface AllowanceInput {
  userId: string;
  tier: string;
  amount: number;
  /** `first-period:<sub>`, the renewal transaction id or `allowance:<sub>:<period start>:<month>`. */
  jobId: string;
  /** Start of the month this allowance is for, and its end (when its unspent credits would expire). */
  startsAt: Date;
  endsAt: Date | null;
  details?: LedgerDetails;
  /**
   * A month the allowance job catches up after the allowance before it came late itself (granted after this
   * month had begun: months granted in one catch-up run, month 0 of a renewal paid late). It expires
   * nothing, neither the allowance before it nor (when it starts before the current one) its own credits:
   * the caught-up credits stay until the next allowance granted in its month closes them under the rule.
   */
  catchUp?: boolean;
}

export interface AllowanceResult extends LedgerResult {
  /** Plan credits of the previous allowance that expired with this one, or a late allowance's own (0 under `full`). */
  expired: number;
}

export interface LedgerResult {
  transaction: CreditTransaction;
  /** false when this (job_id, kind) was already recorded: a redelivery, nothing changed. */
  applied: boolean;
  balance: number;
}

export interface LedgerPage extends CreditSummary {
  items: CreditTransaction[];
  total: number;
}

/**
 * The credit ledger. Balance = sum of delta over the user's rows; users.credit_balance caches it and is
 * updated in the same statement as each insert, under the user-row lock, so it is O(1) to read.
 */
@Injectable()
export class CreditsService {
  private readonly logger = new Logger(CreditsService.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly ledger: CreditsRepository,
    private readonly metrics: MetricsService,
    private readonly config: AppConfig,
    private readonly outbox: OutboxService,
    private readonly uow: UnitOfWork,
  ) {}

  balance(userId: string): Promise<number> {
    return this.ledger.balance(this.prisma, userId);
  }

  /**
   * The user's rows, newest first, with the balance. One REPEATABLE READ transaction: every read sees the
   * same snapshot, so a grant or spend committed in between cannot show a balance that the rows and the
   * total do not explain.
   */
  history(userId: string, request: PageRequest): Promise<LedgerPage> {
    return this.prisma.$transaction(
      async (tx) => {
        const summary = await this.summaryIn(tx, userId);
        const { items, total } = await this.ledger.page(tx, userId, pageOffset(request), request.pageSize);
        return { ...summary, items, total };
      },
      { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead },
    );
  }

  /**
   * Balance split into plan and purchased credits (plan credits are spent first), and when the plan
   * credits expire: the one reading behind `GET /api/v1/credits` (inside history()) and the account export.
   */
  summary(userId: string): Promise<CreditSummary> {
    return this.summaryIn(this.prisma, userId);
  }

  private async summaryIn(db: Tx | PrismaService, userId: string): Promise<CreditSummary> {
    const now = new Date();
    const state = await this.ledger.planState(db, userId);
    // Only a date still ahead can be withdrawn by what the subscriptions say; otherwise they are not read.
    const dated = !!state?.planExpiresAt && state.planExpiresAt > now;
    return creditSummaryOf(
      {
        creditBalance: state?.balance ?? 0,
        purchasedCredits: state?.purchased ?? 0,
        planExpiresAt: state?.planExpiresAt ?? null,
        currentTier: state?.currentTier ?? FREE_TIER,
        subscriptions: dated ? await this.ledger.planSubscriptions(db, userId) : [],
      },
      now,
    );
  }

  /** Adds credits (grant, refund, settle, purchase, positive adjustment) inside the caller's transaction; idempotent. */
  grant(tx: Tx, input: LedgerInput): Promise<LedgerResult> {
    const kind = input.kind ?? CREDIT_KINDS.grant;
    const purchasedShare = kind === CREDIT_KINDS.purchase ? input.amount : (input.purchasedShare ?? 0);
    if (purchasedShare < 0 || purchasedShare > input.amount) {
      throw new RangeError(`the purchased share ${purchasedShare} is outside 0..${input.amount}`);
    }
    return this.apply(tx, input, kind, 1, false, false, { purchasedShare });
  }

  /**
   * A plan allowance (a period's or a month's credits of the tier), idempotent on its job id. When it is
   * granted, the allowance before it closes: under the rollover rule of that allowance's tier its unspent
   * plan credits expire (one `expiry` row keyed on the closed allowance's job id), all under the user-row
   * lock the grant took, so a spend racing with it either runs before (and is not expired) or after.
   * An allowance for a month that starts before the current one (a late job run, a late
   * subscription.created) is granted but closes nothing and does not become the current allowance: the
   * current one already closed its month, so under its tier's rule its own unspent credits expire at once
   * (keyed on its job id), as they would have if it had arrived in time.
   */
  async grantAllowance(tx: Tx, input: AllowanceInput): Promise<AllowanceResult> {
    const result = await this.grant(tx, {
      userId: input.userId,
      amount: input.amount,
      jobId: input.jobId,
      kind: CREDIT_KINDS.grant,
      details: { tier: input.tier, ...input.details },
    });
    if (!result.applied) return { ...result, expired: 0 };
    const state = await this.ledger.planState(tx, input.userId);
    // Plan credits in the balance, signed: below zero when a claw-back took the balance below zero (a hole
    // that credits given back later fill first, as they would have before the close).
    const signed = state ? result.balance - Math.min(state.purchased, Math.max(result.balance, 0)) : 0;
    const plan = Math.max(signed, 0);
    if (input.catchUp && state?.planStartsAt && input.startsAt.getTime() < state.planStartsAt.getTime()) {
      // Caught up behind a later allowance that came late: it stays the current one and closes nothing.
      return { ...result, expired: 0 };
    }
    if (state?.planStartsAt && input.startsAt.getTime() < state.planStartsAt.getTime()) {
      // Never the newer period's credits: at most what this grant added.
      const rule = this.rolloverOf(input.tier);
      const late = await this.expire(tx, input.userId, input.jobId, rule, Math.min(plan, input.amount), {
        closedBy: state.planJobId ?? input.jobId,
        balance: result.balance,
      });
      return { ...result, ...late };
    }
    let expired = 0;
    let balance = result.balance;
    // What the closed allowance leaves after its expiry, signed (users.plan_carried_credits): the plan
    // credits that stay (the room of a `cap` rule used at the close), or below zero the hole its credits
    // left; a reservation made under it and given back later expires only what it adds beyond that.
    let carried = 0;
    const previous = state?.planJobId;
    if (previous && previous !== input.jobId && !input.catchUp) {
      const rule = await this.allowanceRule(tx, previous, input.tier);
      ({ expired, balance } = await this.expire(tx, input.userId, previous, rule, plan - input.amount, {
        closedBy: input.jobId,
        balance,
      }));
      carried = signed - input.amount - expired;
    } else if (previous && previous !== input.jobId) {
      // A catch-up closes nothing: the plan credits (and those of calls in flight) stay in their period.
      carried = state?.planCarried ?? 0;
    }
    const closes = !(previous && previous !== input.jobId && input.catchUp);
    const rule = this.rolloverOf(input.tier);
    await this.ledger.setPlan(tx, input.userId, {
      jobId: input.jobId,
      startsAt: input.startsAt,
      expiresAt: expires(rule) ? input.endsAt : null,
      carried,
      period: closes ? input.jobId : (state?.planPeriod ?? input.jobId),
    });
    return { ...result, balance, expired };
  }

  /**
   * A metered call's reservation closed (settle or refund) after the plan allowance it was made under
   * (`reservedUnder`, recorded on its hold) was closed by the next one: the `returnedPlan` plan credits
   * it gives back were unspent plan credits of the closed allowance, so they expire under that
   * allowance's rule as if they had been in the balance at the close (none: all; cap: what exceeds the
   * cap beyond what the close already carried over; full: nothing), after filling the hole the close left
   * (users.plan_carried_credits below zero: a claw-back of the closed allowance's payment, also one that
   * ran while the call was in flight and took its held credits, clawBackGrants). One `expiry` row keyed on the call's
   * job id, in the caller's transaction, which holds the user-row lock (its closing row took it). Without
   * this, credits reserved at the renewal escaped the rollover rule (docs/decisions/credits.md).
   */
  async expireReturned(
    tx: Tx,
    input: { userId: string; jobId: string; reservedUnder: string | null; returnedPlan: number },
  ): Promise<number> {
    if (!input.reservedUnder || input.returnedPlan <= 0) return 0;
    const state = await this.ledger.planState(tx, input.userId);
    if (!state?.planPeriod || state.planPeriod === input.reservedUnder) return 0;
    const rule = await this.allowanceRule(tx, input.reservedUnder, state.currentTier);
    if (rule.kind === 'full') return 0;
    // Signed: what the close left (a hole below zero); rows from before 2026-12-07 hold 0 under `none`.
    const carriedBefore = Math.min(state.planCarried, rule.kind === 'cap' ? rule.cap : 0);
    const plan = Math.max(0, state.balance - Math.min(state.purchased, state.balance));
    const expiring = Math.min(
      expiringCredits(rule, carriedBefore + input.returnedPlan) - expiringCredits(rule, carriedBefore),
      input.returnedPlan,
      plan,
    );
    const kept = input.returnedPlan - Math.max(expiring, 0);
    if (kept > 0) await this.ledger.addCarried(tx, input.userId, kept);
    if (expiring <= 0) return 0;
    const row = await this.apply(
      tx,
      { userId: input.userId, amount: expiring, jobId: input.jobId },
      CREDIT_KINDS.expiry,
      -1,
      false,
      false,
      {
        details: {
          rollover: ruleText(rule),
          allowance: input.reservedUnder,
          closed_by: state.planPeriod,
          late: true,
        },
      },
    );
    return row.applied ? expiring : 0;
  }

  /**
   * The `expiry` row of the closed allowance `jobId` when `planRemaining` plan credits of it are unspent:
   * what the rule lets expire, once.
   */
  private async expire(
    tx: Tx,
    userId: string,
    jobId: string,
    rule: RolloverRule,
    planRemaining: number,
    context: { closedBy: string; balance: number },
  ): Promise<{ expired: number; balance: number }> {
    const expired = expiringCredits(rule, planRemaining);
    if (expired <= 0) return { expired: 0, balance: context.balance };
    const expiry = await this.apply(
      tx,
      { userId, amount: expired, jobId },
      CREDIT_KINDS.expiry,
      -1,
      false,
      false,
      {
        details: { rollover: ruleText(rule), closed_by: context.closedBy },
      },
    );
    return { expired: expiry.applied ? expired : 0, balance: expiry.balance };
  }

  /**
   * Takes credits back (a refunded or charged-back payment), idempotent on the adjustment id. The balance
   * may go negative; metered calls are then refused (402) until it is positive again. A purchase's
   * claw-back takes purchased credits first, a plan grant's plan credits first.
   */
  async clawBack(tx: Tx, input: LedgerInput & { purchasedFirst: boolean }): Promise<LedgerResult> {
    await this.ledger.allowNegative(tx);
    return this.apply(tx, input, CREDIT_KINDS.clawback, -1, false, false, {
      purchasedFirst: input.purchasedFirst,
    });
  }

  /**
   * Takes back what the grants `grantJobIds` gave (a refunded or charged-back transaction): all of it, or
   * the refunded share of it rounded up for a partial refund (clawBackShare), never more than is left after
   * earlier claw-backs of the same transaction. A later month the allowance job granted short for refunds of
   * it (details `withheld`) counts at its full amount, its withheld part as taken back already; the part it
   * withheld for this very refund (a claw-back that runs after the month, `refundedBefore`) is not taken again.
   * Keyed on `jobId` (the adjustment id). null when the transaction granted nothing. Nothing left to take
   * (earlier claw-backs took it all, e.g. a second full refund): no ledger row is written (`applied: false`,
   * `credits` 0, or what a row already keyed on `jobId` took).
   */
  async clawBackGrants(
    tx: Tx,
    input: {
      jobId: string;
      transactionId: string;
      grantJobIds: string[];
      /**
       * The paid period's later monthly allowances (an annual plan's months 1..n-1, granted by the hourly
       * job): `paidPeriod` picks, of the period starts the user has months of for this subscription, the one
       * the transaction paid (null: none).
       */
      allowancesOf?: {
        providerSubscriptionId: string;
        paidPeriod: (periodStarts: Date[]) => Promise<Date | null>;
      };
      /** The refunded and the paid amount in minor units; null for a full refund (all of it). */
      share: { refunded: number; paid: number } | null;
      /**
       * Minor units of the transaction's refunds whose claw-back ran before this one (a `full` one as the
       * whole payment). Months reduced for more than that were reduced for this refund too (their `refunded`).
       */
      refundedBefore?: number;
      /**
       * Minor units of refunds the credits still left of the payment reflect: those clawed back before this
       * one. With it, credits that expired after refunds were taken back count at their
       * full-month value (expiringClawBackShare).
       */
      reflected?: number;
      /**
       * Record what the claw-back took by the credits it took them from (a chargeback's, which a won
       * chargeback gives back: restoreClawBacks).
       */
      recordSplit?: boolean;
      details?: LedgerDetails;
    },
  ): Promise<{ userId: string; credits: number; applied: boolean } | null> {
    const first = await this.ledger.rowsOf(tx, input.grantJobIds, [
      CREDIT_KINDS.grant,
      CREDIT_KINDS.purchase,
    ]);
    if (first.length === 0) return null;
    const userId = first[0].userId;
    await this.ledger.lockUser(tx, userId);
    const jobIds = first.filter((g) => g.userId === userId).map((g) => g.jobId);
    if (input.allowancesOf) {
      const months = await this.ledger.allowanceGrantsOf(
        tx,
        userId,
        input.allowancesOf.providerSubscriptionId,
      );
      const starts = [...new Set(months.map(allowancePeriodStart).filter((t): t is number => t !== null))];
      const paid =
        starts.length > 0 ? await input.allowancesOf.paidPeriod(starts.map((t) => new Date(t))) : null;
      if (paid) jobIds.push(...months.filter((jobId) => allowancePeriodStart(jobId) === paid.getTime()));
    }
    // What the payment granted, net of what a rollover rule already expired (never taken back twice),
    // also later, from a reservation given back after the allowance closed (expireReturned).
    const rows = [
      ...(await this.ledger.rowsOf(tx, jobIds, [
        CREDIT_KINDS.grant,
        CREDIT_KINDS.purchase,
        CREDIT_KINDS.expiry,
      ])),
      ...(await this.ledger.lateExpiriesOf(tx, userId, jobIds)),
    ];
    const own = rows.filter((r) => r.userId === userId);
    // Months the allowance job granted short because of refunds of this transaction count at their full
    // amount, and what they withheld as already taken back: a refund's share is of what the payment paid for,
    // and never takes again what a month never gave (decision "refunded annual period").
    const withheld = own.reduce((sum, r) => sum + withheldFrom(r, input.transactionId), 0);
    const expired = -own.filter((r) => r.kind === CREDIT_KINDS.expiry).reduce((sum, r) => sum + r.delta, 0);
    const full =
      own.filter((r) => r.kind !== CREDIT_KINDS.expiry).reduce((sum, r) => sum + r.delta, 0) + withheld;
    const granted = Math.max(full - expired, 0);
    const already = (await this.ledger.clawedBackFor(tx, userId, input.transactionId)) + withheld;
    // The part of that which those months withheld for this refund itself (its claw-back comes after them,
    // e.g. it found nothing granted yet when it arrived) is its own share already taken.
    const { share: refund, refundedBefore: before, reflected } = input;
    const withheldForThis =
      refund && before !== undefined
        ? own.reduce((sum, r) => sum + withheldFor(r, input.transactionId, before, refund.refunded), 0)
        : 0;
    // Expired credits count at their full-month value, so what is left keeps what a month granted now keeps
    // (decision "claw-back scope"); nothing expired or nothing taken back before: the share of `granted`.
    const base =
      refund && reflected !== undefined
        ? expiringClawBackShare({ full, expired, left: granted - already, ...refund, reflected })
        : clawBackShare(granted, input.share);
    const share = base - withheldForThis;
    const amount = Math.max(0, Math.min(share, granted - already));
    if (amount === 0) {
      // A 0-credit row would say nothing and still show in the user's history as a claw-back.
      const existing = await this.ledger.findByJob(tx, input.jobId, CREDIT_KINDS.clawback);
      if (existing && existing.userId !== userId) {
        throw new ConflictError(
          `Job ${input.jobId} is already recorded for another user.`,
          'credit_job_conflict',
        );
      }
      return { userId, credits: existing ? -existing.delta : 0, applied: false };
    }
    const purchasedFirst = first.some((g) => g.kind === CREDIT_KINDS.purchase);
    const plan = await this.ledger.planState(tx, userId);
    const state = input.recordSplit ? plan : null;
    const split = state
      ? splitClawBack(
          { balance: state.balance, purchased: state.purchased, allowance: state.planPeriod },
          amount,
          purchasedFirst,
        )
      : null;
    if (split) {
      // Calls in flight: what they give back later fills the hole this claw-back makes (restoreClawBacks).
      const holds = (await this.ledger.openHoldsOf(tx, userId)).filter((h) => h.amount > h.purchased);
      if (holds.length > 0) {
        split.held = holds.reduce((sum, h) => sum + h.amount - h.purchased, 0);
        split.holds = holds.map((h) => `${h.jobId}:${h.purchased}`).join(' ');
      }
    }
    const result = await this.clawBack(tx, {
      userId,
      amount,
      jobId: input.jobId,
      purchasedFirst,
      details: {
        ...input.details,
        transaction_id: input.transactionId,
        granted,
        ...(withheld > 0 ? { withheld } : {}),
        ...(split ?? {}),
      },
    });
    if (result.applied) {
      await this.takeFromHeld(tx, userId, jobIds, plan?.planPeriod ?? null, amount, granted - already);
    }
    return { userId, credits: result.applied ? amount : -result.transaction.delta, applied: result.applied };
  }

  /**
   * A claw-back of a payment whose allowance (`jobIds`) was closed while metered calls reserved under it are
   * still in flight takes its share of their held plan credits too (the share `amount` is of the `left`
   * credits of the payment): those credits count as taken, so the expiry of what the calls give back later
   * (expireReturned) starts that far below what the close left instead of expiring them a second time. In
   * users.plan_carried_credits, under the user-row lock the caller holds.
   */
  private async takeFromHeld(
    tx: Tx,
    userId: string,
    jobIds: string[],
    current: string | null,
    amount: number,
    left: number,
  ): Promise<void> {
    const held = await this.ledger.heldUnder(
      tx,
      userId,
      jobIds.filter((jobId) => jobId !== current),
    );
    if (held <= 0 || amount <= 0) return;
    const taken = Math.min(held, clawBackShare(held, { refunded: amount, paid: Math.max(left, amount) }));
    if (taken > 0) await this.ledger.addCarried(tx, userId, -taken);
  }

  /**
   * Gives back what the claw-backs `clawBackJobIds` (a transaction's chargebacks) took, once the merchant won
   * them (approved `chargeback_reverse`s): what each took less the unspent plan credits the rollover rule
   * would have expired since had they not been taken (restorableOf), the share `money` reversed of that
   * (reversedShare), less what earlier won chargebacks of the transaction gave back. One positive `clawback`
   * row keyed on `jobId` (the reverse's adjustment id): the claw-back undone, so the transaction's net
   * claw-back is one sum (clawedBackFor). The purchased credits taken come back as purchased credits. null
   * when no claw-back of these took anything; nothing due: no row (`applied: false`).
   */
  async restoreClawBacks(
    tx: Tx,
    input: {
      jobId: string;
      transactionId: string;
      clawBackJobIds: string[];
      /** Minor units the chargebacks took and those their approved reverses returned. */
      money: { reversed: number; charged: number };
      details?: LedgerDetails;
    },
  ): Promise<{ userId: string; credits: number; applied: boolean; expired: number } | null> {
    const taken = (await this.ledger.rowsOf(tx, input.clawBackJobIds, [CREDIT_KINDS.clawback])).filter(
      (r) => r.delta < 0,
    );
    if (taken.length === 0) return null;
    const userId = taken[0].userId;
    await this.ledger.lockUser(tx, userId);
    const state = await this.ledger.planState(tx, userId);
    let restorable = 0;
    let expired = 0;
    let purchased = 0;
    for (const row of taken.filter((r) => r.userId === userId)) {
      const split = splitOf(row);
      const rule = split
        ? await this.allowanceRule(tx, split.allowance)
        : this.rolloverOf(state?.currentTier ?? FREE_TIER);
      const current = (state?.planPeriod ?? null) === (split?.allowance ?? null);
      const expiredSince =
        rule.kind === 'cap' && !(split && current)
          ? await this.ledger.expiredSince(tx, userId, row.createdAt)
          : false;
      const returned = split ? await this.returnedBy(tx, userId, split) : 0;
      const part = restorableOf({ taken: -row.delta, split, rule, current, expiredSince, returned });
      restorable += part.restorable;
      expired += part.expired;
      purchased += split?.purchased ?? 0;
    }
    const before = await this.ledger.restoredFor(tx, userId, input.transactionId);
    const amount = Math.max(0, reversedShare(restorable, input.money) - before.credits);
    if (amount === 0) {
      const existing = await this.ledger.findByJob(tx, input.jobId, CREDIT_KINDS.clawback);
      return { userId, credits: existing ? existing.delta : 0, applied: false, expired };
    }
    const purchasedShare = Math.min(
      amount,
      Math.max(0, reversedShare(purchased, input.money) - before.purchased),
    );
    const result = await this.grant(tx, {
      userId,
      amount,
      jobId: input.jobId,
      kind: CREDIT_KINDS.clawback,
      purchasedShare,
      details: {
        ...input.details,
        transaction_id: input.transactionId,
        clawed_back: taken.reduce((sum, r) => sum + -r.delta, 0),
        purchased: purchasedShare,
        ...(expired > 0 ? { expired } : {}),
      },
    });
    return {
      userId,
      credits: result.applied ? amount : result.transaction.delta,
      applied: result.applied,
      expired,
    };
  }

  /**
   * Plan credits the reservations open at a claw-back (its split's `holds`) gave back since: each closing
   * row's (`settle` or `refund`) credits less the purchased credits it returned (what the hold took from
   * purchased credits comes back first: MeteredCreditsService), at most what they held.
   */
  private async returnedBy(tx: Tx, userId: string, split: ClawBackSplit): Promise<number> {
    if (!split.holds || !split.held) return 0;
    const purchased = new Map<string, number>();
    for (const entry of split.holds.split(' ')) {
      const at = entry.lastIndexOf(':');
      if (at > 0) purchased.set(entry.slice(0, at), Number(entry.slice(at + 1)) || 0);
    }
    const closing = await this.ledger.rowsOf(
      tx,
      [...purchased.keys()],
      [CREDIT_KINDS.settle, CREDIT_KINDS.refund],
    );
    const returned = closing
      .filter((r) => r.userId === userId && r.delta > 0)
      .reduce((sum, r) => sum + Math.max(0, r.delta - (purchased.get(r.jobId) ?? 0)), 0);
    return Math.min(returned, split.held);
  }

  /**
   * The rollover rule of the plan allowance `jobId` (its grant's tier, recorded on its grant row; else
   * `fallbackTier`'s): the rule its unspent credits lived under. Plan credits of no allowance (null) are
   * never closed by one: `full`.
   */
  private async allowanceRule(
    db: Db,
    jobId: string | null,
    fallbackTier: string = FREE_TIER,
  ): Promise<RolloverRule> {
    if (!jobId) return { kind: 'full' };
    const grant = await this.ledger.findByJob(db, jobId, CREDIT_KINDS.grant);
    const tier = (grant?.details as { tier?: unknown } | null)?.tier;
    return this.rolloverOf(typeof tier === 'string' ? tier : fallbackTier);
  }

  /** The allowance grants (`allowance:<subscription>:...` job ids) a user has of one subscription. */
  allowanceGrantsOf(db: Db, userId: string, providerSubscriptionId: string): Promise<string[]> {
    return this.ledger.allowanceGrantsOf(db, userId, providerSubscriptionId);
  }

  /** Which of `jobIds` (adjustment ids) have a `clawback` ledger row: claw-backs that ran and took something. */
  async clawBacksOf(db: Db, jobIds: string[]): Promise<Set<string>> {
    if (jobIds.length === 0) return new Set();
    const rows = await this.ledger.rowsOf(db, jobIds, [CREDIT_KINDS.clawback]);
    return new Set(rows.map((r) => r.jobId));
  }

  rolloverOf(tier: string): RolloverRule {
    const tiers = this.config.project.tiers;
    return parseRollover(Object.hasOwn(tiers, tier) ? tiers[tier].rollover : undefined) ?? { kind: 'full' };
  }

  /**
   * The spec's four steps: lock the user row until the transaction ends, compute the balance, refuse when
   * it does not cover the spend (402), insert the negative row. A redelivery with the same (job_id, kind)
   * returns the first result and deducts nothing. Inside the caller's unit of work (a low-balance alert is
   * written to its outbox).
   */
  deduct(tx: Tx, input: LedgerInput): Promise<LedgerResult> {
    const kind = input.kind ?? CREDIT_KINDS.spend;
    return this.apply(tx, input, kind, -1, true, false, { spent: spentBy(kind, input.amount) });
  }

  /**
   * The deduction as its own transaction, one statement; `hold` also opens the metered call's reservation
   * in that statement. A reservation is an upper bound of the call's cost, not a spend: the low-balance
   * rule waits for its settle (`settle`), and a refund spends nothing.
   */
  deductStandalone(input: LedgerInput, options: { hold?: boolean } = {}): Promise<LedgerResult> {
    const kind = input.kind ?? CREDIT_KINDS.spend;
    return this.apply(null, input, kind, -1, true, options.hold, {
      spent: options.hold ? 0 : spentBy(kind, input.amount),
    });
  }

  /**
   * Closes a metered call's reservation at its real cost, inside the caller's unit of work: the `settle`
   * row gives back `amount` (reserved - charged, possibly 0). `charged` is what the call really spent, so
   * this is where a metered call's low-balance alert is decided.
   */
  settle(tx: Tx, input: Omit<LedgerInput, 'kind'> & { charged: number }): Promise<LedgerResult> {
    const purchasedShare = input.purchasedShare ?? 0;
    if (purchasedShare < 0 || purchasedShare > input.amount) {
      throw new RangeError(`the purchased share ${purchasedShare} is outside 0..${input.amount}`);
    }
    return this.apply(tx, input, CREDIT_KINDS.settle, 1, false, false, {
      purchasedShare,
      spent: input.charged,
    });
  }

  /**
   * A real spend (`spent` > 0: a plain deduct, or a metered call's charge at its settle) that took the
   * user's settled balance from at or above LOW_BALANCE_PERCENT of the tier's monthly allowance to below it
   * enqueues one `low_balance` e-mail. The settled balance is the balance plus what open reservations
   * hold: calls still in flight are upper bounds that their settles mostly give back, so neither a
   * reservation nor another call's open hold decides the alert. A reservation and a refund spend nothing
   * and never get here. The outbox job id names the user and the current plan allowance (the period), so
   * however many spends cross the line in one period, one e-mail is sent. Above the line nothing is read;
   * below it, one indexed read of the user's open holds.
   */
  private async alertLowBalance(
    tx: Tx | null,
    userId: string,
    spent: number,
    result: ApplyOutcome,
  ): Promise<void> {
    if (result.balance === null || !result.tier || spent <= 0) return;
    const tiers = this.config.project.tiers;
    const monthly = Object.hasOwn(tiers, result.tier) ? tiers[result.tier].monthlyCredits : 0;
    const percent = this.config.credits.lowBalancePercent;
    const limit = monthly * percent;
    // Open holds only add to the balance: at or above the line, the settled balance is too.
    if (limit <= 0 || result.balance * 100 >= limit) return;
    const after = result.balance + (await this.ledger.heldFor(tx ?? this.prisma, userId));
    if (!(after * 100 < limit && (after + spent) * 100 >= limit)) return;
    const period = createHash('sha256')
      .update(result.planJobId ?? 'no-allowance')
      .digest('hex')
      .slice(0, 20);
    const jobId = `low-balance-${userId}-${period}`;
    const job = {
      userId,
      templateKey: LOW_BALANCE_TEMPLATE,
      idempotencyKey: jobId,
      data: {
        balance: after,
        tier: result.tier,
        packs_url: `${this.config.email.publicBaseUrl}/api/v1/billing/credit-packs`,
      },
    };
    try {
      if (tx) {
        // Committed with the caller's spend and pushed when the caller's unit of work commits.
        await this.outbox.add(tx, JOBS.sendEmail, job, jobId);
        return;
      }
      // The spend is committed already: its own unit, whose push the metered call does not wait for.
      await this.uow.run((t) => this.outbox.add(t, JOBS.sendEmail, job, jobId), {
        afterCommit: 'background',
      });
    } catch (err) {
      // The spend is committed; a missed alert must not turn it into a failed call.
      if (tx) throw err;
      this.logger.warn({ err: (err as Error).message, user_id: userId }, 'low-balance alert not enqueued');
    }
  }

  private async apply(
    tx: Tx | null,
    input: Pick<LedgerInput, 'userId' | 'amount' | 'jobId' | 'details'>,
    kind: string,
    sign: 1 | -1,
    mustCover: boolean,
    hold = false,
    extra: {
      purchasedShare?: number;
      purchasedFirst?: boolean;
      details?: LedgerDetails;
      /** Credits this row really spends (the low-balance rule); 0 for everything but spends and settles. */
      spent?: number;
    } = {},
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
      details: extra.details ? { ...input.details, ...extra.details } : input.details,
      mustCover,
      hold: hold ? input.amount : undefined,
      purchasedShare: extra.purchasedShare,
      purchasedFirst: extra.purchasedFirst,
    };
    const result = tx ? await this.ledger.apply(tx, write) : await this.ledger.applyAlone(write);

    if (result.outcome === 'inserted') {
      // Counted before commit: a rolled-back caller over-counts, which a rate metric tolerates.
      this.metrics.credits.inc({ kind }, input.amount);
      if (extra.spent) await this.alertLowBalance(tx, input.userId, extra.spent, result);
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

/** A deduct of kind `spend` spends its amount; other negative kinds (an adjustment) are not spends. */
const spentBy = (kind: string, amount: number): number => (kind === CREDIT_KINDS.spend ? amount : 0);

const ruleText = (rule: RolloverRule): string => (rule.kind === 'cap' ? `cap:${rule.cap}` : rule.kind);

/** The period start (ms) an allowance job id `allowance:<sub>:<period start ISO>:<month>` names; null for others. */
export function allowancePeriodStart(jobId: string): number | null {
  const match = /^allowance:.*:(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z):\d+$/.exec(jobId);
  return match ? Date.parse(match[1]) : null;
}

/**
 * What an allowance grant withheld because of refunds of `transactionId` (its details' `withheld`, written by
 * the allowance job with the transaction it was reduced for); 0 for any other row.
 */
function withheldFrom(row: CreditTransaction, transactionId: string): number {
  return reductionOf(row, transactionId)?.withheld ?? 0;
}

/**
 * Of what an allowance grant withheld, the part due to the refund of `refunded` minor units whose claw-back
 * comes after `before` minor units of earlier ones: the month was reduced for `details.refunded` of
 * `details.paid`, so the refunds up to `before` account for `ceil(full x min(refunded, before) / paid)` of it
 * and this one for what it adds up to `before + refunded`. 0 in order (every refund the month was reduced for
 * was clawed back before), or for a row without these details.
 */
function withheldFor(
  row: CreditTransaction,
  transactionId: string,
  before: number,
  refunded: number,
): number {
  const reduction = reductionOf(row, transactionId);
  const reducedFor = reduction?.refunded;
  const paid = reduction?.paid;
  if (!reduction || !reducedFor || !paid) return 0;
  const full = row.delta + reduction.withheld;
  const upTo = (total: number) => clawBackShare(full, { refunded: Math.min(reducedFor, total), paid });
  return Math.max(0, upTo(before + refunded) - upTo(before));
}

/** The reduction an allowance grant's details record for refunds of `transactionId`; null when none. */
function reductionOf(
  row: CreditTransaction,
  transactionId: string,
): { withheld: number; refunded?: number; paid?: number } | null {
  if (row.kind !== CREDIT_KINDS.grant) return null;
  const details = row.details as {
    transaction_id?: unknown;
    withheld?: unknown;
    refunded?: unknown;
    paid?: unknown;
  } | null;
  if (details?.transaction_id !== transactionId) return null;
  const count = (value: unknown) =>
    typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
  const withheld = count(details.withheld);
  if (!withheld) return null;
  return { withheld, refunded: count(details.refunded), paid: count(details.paid) };
}

/** What a claw-back row records of the credits it took (recordSplit); null for rows without it. */
function splitOf(row: CreditTransaction): ClawBackSplit | null {
  const details = row.details as {
    unspent?: unknown;
    purchased?: unknown;
    allowance?: unknown;
    left?: unknown;
    held?: unknown;
    holds?: unknown;
  } | null;
  const count = (value: unknown) => (typeof value === 'number' && Number.isInteger(value) ? value : null);
  const unspent = count(details?.unspent);
  if (unspent === null) return null;
  return {
    unspent,
    purchased: count(details?.purchased) ?? 0,
    allowance: typeof details?.allowance === 'string' ? details.allowance : null,
    left: count(details?.left) ?? 0,
    held: count(details?.held) ?? 0,
    holds: typeof details?.holds === 'string' ? details.holds : undefined,
  };
}
