import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { Subscription } from '../../../generated/prisma/client.js';
import { CreditsService } from '../../credits/credits.service.js';
import { addMonths, allowanceJobId, dueMonths, monthEnd } from './allowance-months.js';
import { BillingCatalog, FREE_TIER } from '../billing.catalog.js';
import { SubscriptionsRepository } from '../subscriptions/subscriptions.repository.js';

const BATCH = 200;

export interface AllowanceRun {
  subscriptions: number;
  granted: number;
  credits: number;
}

/**
 * The hourly allowance job (issue 18 item 1): an annual subscriber gets the tier's monthly credits on each
 * monthly anniversary of the period start, months 1..11 (month 0 comes with the event that opened the
 * period). Each month is one ledger grant keyed `allowance:<subscription>:<period start>:<month>`, so
 * concurrent or repeated runs (replicas, a retried job, a run after an outage that catches up several
 * months) grant each month exactly once. Each month is granted under the subscription's lock from the row
 * re-read there, like every other billing writer. `now` is the job's clock (tests pass a simulated one).
 */
@Injectable()
export class AllowanceService {
  private readonly logger = new Logger(AllowanceService.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly catalog: BillingCatalog,
    private readonly credits: CreditsService,
  ) {}

  async run(now: Date = new Date()): Promise<AllowanceRun> {
    const result: AllowanceRun = { subscriptions: 0, granted: 0, credits: 0 };
    let afterId: string | undefined;
    for (;;) {
      const page = await this.subscriptions.multiMonthPeriods(this.prisma, now, { afterId, limit: BATCH });
      for (const subscription of page) {
        result.subscriptions += 1;
        const granted = await this.grantDue(subscription, now);
        result.granted += granted.months;
        result.credits += granted.credits;
      }
      if (page.length < BATCH) break;
      afterId = page[page.length - 1].id;
    }
    if (result.granted > 0) this.logger.log(result, 'monthly allowances granted');
    return result;
  }

  /**
   * Grants the months of one subscription's current period that have come; oldest first. `row` is the page's
   * read, taken under no lock: each month's transaction takes the subscription's lock (then the user row's,
   * which the grant takes, the order of every billing writer), re-reads the row there and grants from it only
   * while it still qualifies for the same period. A webhook or a refund of the period's payment applied
   * meanwhile has then either committed (and is seen) or waits for the grant (docs/decisions/billing.md,
   * "Ordering and concurrency").
   */
  private async grantDue(row: Subscription, now: Date): Promise<{ months: number; credits: number }> {
    const start = row.currentPeriodStart;
    if (!start || this.amountOf(row) <= 0) return { months: 0, credits: 0 };
    const granted = { months: 0, credits: 0 };
    // Months granted by an earlier run are skipped without a transaction (the key still guards a race).
    const done = new Set(
      await this.credits.allowanceGrantsOf(this.prisma, row.userId, row.providerSubscriptionId),
    );
    for (const index of dueMonths(periodOf(row, start), now)) {
      const jobId = allowanceJobId(row.providerSubscriptionId, start, index);
      if (done.has(jobId)) continue;
      const credits = await this.prisma.$transaction(async (tx) => {
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
        const grant = await this.credits.grantAllowance(tx, {
          userId: current.userId,
          tier: current.tier,
          amount,
          jobId,
          startsAt: addMonths(start, index),
          endsAt: monthEnd(start, index, current.currentPeriodEnd),
          details: {
            source: 'allowance',
            subscription_id: current.providerSubscriptionId,
            month: index,
          },
        });
        return grant.applied ? amount : 0;
      });
      // No longer a candidate, or its period moved on: no later month of this period is due either.
      if (credits === null) break;
      if (credits > 0) {
        granted.months += 1;
        granted.credits += credits;
      }
    }
    return granted;
  }

  /** The tier's monthly credits; 0 when the tier grants none. */
  private amountOf(row: Subscription): number {
    return row.tier === FREE_TIER ? 0 : Math.max(this.catalog.monthlyCredits(row.tier), 0);
  }
}

/** The period `dueMonths` counts: `row`'s, from `start` (the period start the job read). */
const periodOf = (row: Subscription, start: Date) => ({
  start,
  end: row.currentPeriodEnd,
  interval: row.billingInterval,
  frequency: row.billingFrequency,
});
