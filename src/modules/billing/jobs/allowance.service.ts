import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { Subscription } from '../../../generated/prisma/client.js';
import { AuditService, systemActor } from '../../audit/audit.service.js';
import { clawBackShare } from '../../credits/clawback-share.js';
import { CreditsService } from '../../credits/credits.service.js';
import { addMonths, allowanceJobId, dueMonths, monthEnd } from './allowance-months.js';
import { BillingCatalog, FREE_TIER } from '../billing.catalog.js';
import { type PeriodPayment, PaymentsService } from '../payments/payments.service.js';
import { BillingUsersRepository } from '../subscriptions/billing-users.repository.js';
import { SubscriptionsRepository } from '../subscriptions/subscriptions.repository.js';

const BATCH = 200;

export interface AllowanceRun {
  subscriptions: number;
  granted: number;
  credits: number;
  /** Credits of the months granted that refunds of the period's payment held back (reduced or skipped months). */
  withheld: number;
}

/** Why a month was granted short (ledger details and audit `reason`). */
export const ALLOWANCE_REFUND_REASONS = {
  /** The period's payment was refunded or charged back in full: the month grants nothing. */
  full: 'payment_refunded',
  /**
   * Part of it was: the month grants the rest (decision "refunded annual period"), possibly nothing when
   * rounding up withholds all of it.
   */
  partial: 'payment_partially_refunded',
} as const;

/**
 * The hourly allowance job (issue 18 item 1): an annual subscriber gets the tier's monthly credits on each
 * monthly anniversary of the period start, months 1..11 (month 0 comes with the event that opened the
 * period). Each month is one ledger grant keyed `allowance:<subscription>:<period start>:<month>`, so
 * concurrent or repeated runs (replicas, a retried job, a run after an outage that catches up several
 * months) grant each month exactly once. Each month is granted under the subscription's lock from the row
 * re-read there, like every other billing writer. `now` is the job's clock (tests pass a simulated one).
 *
 * A month of a period whose payment was refunded or charged back (approved) while the subscription runs on
 * is granted net of the refunded share, rounded as the claw-back rounds (`amount - ceil(amount x refunded /
 * paid)`, refunds added up): nothing once the whole payment was returned. The month is still recorded (a
 * grant of what is left, possibly 0) with the reason and what was withheld, and audited
 * `credits.allowance_reduced` (decision "refunded annual period" in docs/decisions/billing.md).
 */
@Injectable()
export class AllowanceService {
  private readonly logger = new Logger(AllowanceService.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly catalog: BillingCatalog,
    private readonly credits: CreditsService,
    private readonly payments: PaymentsService,
    private readonly users: BillingUsersRepository,
    private readonly audit: AuditService,
  ) {}

  async run(now: Date = new Date()): Promise<AllowanceRun> {
    const result: AllowanceRun = { subscriptions: 0, granted: 0, credits: 0, withheld: 0 };
    let afterId: string | undefined;
    for (;;) {
      const page = await this.subscriptions.multiMonthPeriods(this.prisma, now, { afterId, limit: BATCH });
      for (const subscription of page) {
        result.subscriptions += 1;
        const granted = await this.grantDue(subscription, now);
        result.granted += granted.months;
        result.credits += granted.credits;
        result.withheld += granted.withheld;
      }
      if (page.length < BATCH) break;
      afterId = page[page.length - 1].id;
    }
    if (result.granted > 0 || result.withheld > 0) this.logger.log(result, 'monthly allowances granted');
    return result;
  }

  /**
   * Grants the months of one subscription's current period that have come; oldest first. `row` is the page's
   * read, taken under no lock: each month's transaction takes the subscription's lock (then the user row's,
   * which the grant takes, the order of every billing writer), re-reads the row there and grants from it only
   * while it still qualifies for the same period. A webhook or a refund of the period's payment applied
   * meanwhile has then either committed (and is seen) or waits for the grant (docs/decisions/billing.md,
   * "Ordering and concurrency"). The period's payment and its refunds are read there too, after the lock.
   */
  private async grantDue(
    row: Subscription,
    now: Date,
  ): Promise<{ months: number; credits: number; withheld: number }> {
    const start = row.currentPeriodStart;
    if (!start || this.amountOf(row) <= 0) return { months: 0, credits: 0, withheld: 0 };
    const granted = { months: 0, credits: 0, withheld: 0 };
    // Months granted by an earlier run are skipped without a transaction (the key still guards a race).
    const done = new Set(
      await this.credits.allowanceGrantsOf(this.prisma, row.userId, row.providerSubscriptionId),
    );
    // Whether the month before the one being granted came late (after that month had begun): a month granted
    // earlier in this run always did; month 0 did when the period's payment was made after month 1 began.
    let lateBefore = false;
    for (const index of dueMonths(periodOf(row, start), now)) {
      const jobId = allowanceJobId(row.providerSubscriptionId, start, index);
      if (done.has(jobId)) continue;
      const month = await this.prisma.$transaction(async (tx) => {
        await this.subscriptions.lock(tx, row.providerSubscriptionId);
        const [current] = await this.subscriptions.multiMonthPeriods(tx, now, { id: row.id, limit: 1 });
        const amount = current ? this.amountOf(current) : 0;
        if (
          !current ||
          amount <= 0 ||
          current.currentPeriodStart?.getTime() !== start.getTime() ||
          !dueMonths(periodOf(current, start), now).includes(index)
        ) {
          return null;
        }
        // Under the subscription's lock: a refund of the payment has committed, or reads this grant.
        const payment = await this.payments.periodPayment(tx, current.providerSubscriptionId, start);
        // Past due with the period's payment recorded: another payment failed (a one-off charge), the period
        // is paid and its months come on time. Without it the renewal itself is unpaid: nothing until paid.
        if (current.status === 'PAST_DUE' && !payment) return null;
        const catchUp =
          lateBefore ||
          (index === 1 &&
            (await this.payments.periodPaidBetween(
              tx,
              current.providerSubscriptionId,
              addMonths(start, 1),
              now,
            )));
        const withheld = withheldOf(amount, payment);
        const reduced = payment && withheld > 0 ? refundDetails(payment, withheld) : null;
        const grant = await this.credits.grantAllowance(tx, {
          userId: current.userId,
          tier: current.tier,
          amount: amount - withheld,
          jobId,
          startsAt: addMonths(start, index),
          endsAt: monthEnd(start, index, current.currentPeriodEnd),
          catchUp,
          details: {
            source: 'allowance',
            subscription_id: current.providerSubscriptionId,
            month: index,
            ...(reduced ?? {}),
          },
        });
        if (!grant.applied) return { credits: 0, withheld: 0 };
        if (reduced) {
          await this.audit.record(tx, {
            actor: systemActor('allowance'),
            action: 'credits.allowance_reduced',
            userId: (await this.users.findIdentity(tx, current.userId))?.identityUserId ?? null,
            resourceType: 'subscription',
            resourceId: current.id,
            details: {
              subscription_id: current.providerSubscriptionId,
              transaction_id: reduced.transaction_id,
              job_id: jobId,
              tier: current.tier,
              reason: reduced.reason,
              credits: amount - withheld,
              withheld,
            },
          });
        }
        return { credits: amount - withheld, withheld };
      });
      // No longer a candidate, or its period moved on: no later month of this period is due either.
      if (month === null) break;
      lateBefore = true;
      if (month.credits > 0) {
        granted.months += 1;
        granted.credits += month.credits;
      }
      granted.withheld += month.withheld;
    }
    return granted;
  }

  /** The tier's monthly credits; 0 when the tier grants none. */
  private amountOf(row: Subscription): number {
    return row.tier === FREE_TIER ? 0 : Math.max(this.catalog.monthlyCredits(row.tier), 0);
  }
}

/**
 * What refunds of the period's payment hold back of a month of `amount` credits: the claw-back's share of
 * the refunded total, `ceil(amount x refunded / paid)` (clawBackShare), so a month granted after a refund
 * keeps what a month granted before it keeps after its claw-back; all of it once the payment was returned.
 */
function withheldOf(amount: number, payment: PeriodPayment | null): number {
  if (!payment || payment.refunded <= 0) return 0;
  return clawBackShare(amount, { refunded: payment.refunded, paid: payment.paid });
}

/**
 * The ledger details of a month granted short: why, the payment it was reduced for, and what it withheld
 * (the claw-back of a later refund of the same payment counts the month at its full amount and the withheld
 * part as taken back already, CreditsService.clawBackGrants).
 */
function refundDetails(payment: PeriodPayment, withheld: number) {
  return {
    // By the payment, not the month: rounding up can withhold a whole month of a payment refunded in part.
    reason:
      payment.refunded >= payment.paid ? ALLOWANCE_REFUND_REASONS.full : ALLOWANCE_REFUND_REASONS.partial,
    transaction_id: payment.transactionId,
    withheld,
    refunded: payment.refunded,
    paid: payment.paid,
  };
}

/** The period `dueMonths` counts: `row`'s, from `start` (the period start the job read). */
const periodOf = (row: Subscription, start: Date) => ({
  start,
  end: row.currentPeriodEnd,
  interval: row.billingInterval,
  frequency: row.billingFrequency,
});
