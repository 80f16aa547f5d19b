/**
 * Months per billing interval, to normalise a price to a monthly amount: a yearly price counts 1/12 per
 * month, a weekly one 52/12, a daily one 365/12 (the usual MRR conventions).
 */
const MONTHLY_FACTOR: Record<string, number> = {
  day: 365 / 12,
  week: 52 / 12,
  month: 1,
  year: 1 / 12,
};

/**
 * Monthly value of `amount` (unit_amount x quantity, minor units) billed every `frequency` `interval`s,
 * unrounded (round once per reported total). null when the interval is unknown: such a subscription cannot
 * be priced and is reported as unpriced instead of guessed.
 */
export function monthlyAmount(
  amount: number,
  interval: string | null,
  frequency: number | null,
): number | null {
  const factor = interval ? MONTHLY_FACTOR[interval.toLowerCase()] : undefined;
  if (factor === undefined) return null;
  const every = frequency && frequency > 0 ? frequency : 1;
  return (amount * factor) / every;
}
