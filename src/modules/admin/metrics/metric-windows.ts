export const DAY_MS = 86_400_000;

/**
 * Rolling windows ending at one instant. A window of N days is (now - N x 24 h, now]: a row stamped exactly
 * N days ago is outside it, a row stamped exactly `now` inside, so consecutive windows never overlap.
 */
export interface MetricWindows {
  now: Date;
  since1d: Date;
  since7d: Date;
  since30d: Date;
}

export function windowsEndingAt(now: Date): MetricWindows {
  const at = now.getTime();
  return {
    now,
    since1d: new Date(at - DAY_MS),
    since7d: new Date(at - 7 * DAY_MS),
    since30d: new Date(at - 30 * DAY_MS),
  };
}

/** part / whole rounded to 4 decimals; 0 when there is nothing to divide (never NaN in a dashboard). */
export function ratio(part: number, whole: number): number {
  if (!whole) return 0;
  return Math.round((part / whole) * 10_000) / 10_000;
}

export interface RankedCount {
  key: string;
  count: number;
}

/**
 * The `limit` largest counts (ties by key, so the order is stable), then one `other` entry with the rest
 * when there is a rest. Zero counts are dropped.
 */
export function topWithOther(counts: RankedCount[], limit: number, otherKey = 'other'): RankedCount[] {
  const sorted = counts
    .filter((c) => c.count > 0)
    .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const top = sorted.slice(0, limit);
  const rest = sorted.slice(limit).reduce((sum, c) => sum + c.count, 0);
  return rest > 0 ? [...top, { key: otherKey, count: rest }] : top;
}
