/**
 * Months of a billing period (issue 18 item 1): a period longer than a month (an annual plan) gets the
 * tier's monthly allowance on every monthly anniversary of its start. Month 0 comes with the event that
 * opens the period (subscription.created, or the renewal's transaction.completed); months 1..n-1 come
 * from the hourly allowance job, keyed `allowance:<subscription id>:<period start>:<month index>`.
 */

/** `start` plus n calendar months in UTC; the 31st becomes the last day of a shorter month. */
export function addMonths(start: Date, months: number): Date {
  const y = start.getUTCFullYear();
  const m = start.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const day = Math.min(start.getUTCDate(), lastDay);
  return new Date(
    Date.UTC(
      y,
      m,
      day,
      start.getUTCHours(),
      start.getUTCMinutes(),
      start.getUTCSeconds(),
      start.getUTCMilliseconds(),
    ),
  );
}

/** Months in one billing period of this cycle: 12 per year, 1 per month; 1 for anything shorter. */
export function monthsInPeriod(interval: string | null, frequency: number | null): number {
  const f = frequency && frequency > 0 ? frequency : 1;
  if (interval === 'year') return 12 * f;
  if (interval === 'month') return f;
  return 1;
}

/** Job id of a subscription's first-period grant (month 0): one per subscription, whatever the event ids. */
export const firstPeriodGrantId = (providerSubscriptionId: string): string =>
  `first-period:${providerSubscriptionId}`;

export const allowanceJobId = (providerSubscriptionId: string, periodStart: Date, month: number): string =>
  `allowance:${providerSubscriptionId}:${periodStart.toISOString()}:${month}`;

/** The end of month `index` of a period: the next anniversary, never after the period's end. */
export function monthEnd(periodStart: Date, index: number, periodEnd: Date | null): Date {
  const next = addMonths(periodStart, index + 1);
  return periodEnd && periodEnd.getTime() < next.getTime() ? periodEnd : next;
}

/** Month indexes 1..n-1 whose anniversary has come (<= now) and lies inside the period. */
export function dueMonths(
  period: { start: Date; end: Date | null; interval: string | null; frequency: number | null },
  now: Date,
): number[] {
  const months = monthsInPeriod(period.interval, period.frequency);
  const due: number[] = [];
  for (let index = 1; index < months; index += 1) {
    const anniversary = addMonths(period.start, index);
    if (anniversary.getTime() > now.getTime()) break;
    if (period.end && anniversary.getTime() >= period.end.getTime()) break;
    due.push(index);
  }
  return due;
}

/**
 * A payment is matched to the period it opened when they are at most a month apart (PaymentsService.periodPayment,
 * and the claw-back, which takes the months of the period whose payment that is).
 */
export const PAID_PERIOD_TOLERANCE_MS = 31 * 86_400_000;

/**
 * Of a subscription's payments that pay a period, the one nearest `periodStart` (the payment that opened that
 * period); of two as near, the one at or after the start (a period is paid when it starts, not a month
 * before), then the smaller transaction id. undefined when there is none.
 */
export function nearestPayment<P extends { occurredAt: Date; providerTransactionId: string }>(
  payments: P[],
  periodStart: Date,
): P | undefined {
  const distance = (p: P) => Math.abs(p.occurredAt.getTime() - periodStart.getTime());
  let best: P | undefined;
  for (const payment of payments) {
    if (!best) {
      best = payment;
      continue;
    }
    const [d, b] = [distance(payment), distance(best)];
    const preferred =
      payment.occurredAt.getTime() > best.occurredAt.getTime() ||
      (payment.occurredAt.getTime() === best.occurredAt.getTime() &&
        payment.providerTransactionId < best.providerTransactionId);
    if (d < b || (d === b && preferred)) best = payment;
  }
  return best;
}
