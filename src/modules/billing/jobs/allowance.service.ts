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
 * months) grant each month exactly once. `now` is the job's clock (tests pass a simulated one).
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

  /** Grants the months of one subscription's current period that have come; oldest first. */
  private async grantDue(row: Subscription, now: Date): Promise<{ months: number; credits: number }> {
    const start = row.currentPeriodStart;
    const amount = this.catalog.monthlyCredits(row.tier);
    if (!start || row.tier === FREE_TIER || amount <= 0) return { months: 0, credits: 0 };
    const period = {
      start,
      end: row.currentPeriodEnd,
      interval: row.billingInterval,
      frequency: row.billingFrequency,
    };
    let months = 0;
    // Months granted by an earlier run are skipped without a transaction (the key still guards a race).
    const done = new Set(
      await this.credits.allowanceGrantsOf(this.prisma, row.userId, row.providerSubscriptionId),
    );
    for (const index of dueMonths(period, now)) {
      const jobId = allowanceJobId(row.providerSubscriptionId, start, index);
      if (done.has(jobId)) continue;
      const grant = await this.prisma.$transaction((tx) =>
        this.credits.grantAllowance(tx, {
          userId: row.userId,
          tier: row.tier,
          amount,
          jobId,
          startsAt: addMonths(start, index),
          endsAt: monthEnd(start, index, row.currentPeriodEnd),
          details: {
            source: 'allowance',
            subscription_id: row.providerSubscriptionId,
            month: index,
          },
        }),
      );
      if (grant.applied) months += 1;
    }
    return { months, credits: months * amount };
  }
}
