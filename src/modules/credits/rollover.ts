/**
 * Rollover rules of a tier's plan allowance (issue 18 item 3): `full` keeps every unspent plan credit,
 * `none` expires them when the next allowance is granted, `cap:<n>` keeps at most n. Pure functions; the
 * ledger applies them under the user-row lock.
 */
export type RolloverRule = { kind: 'full' } | { kind: 'none' } | { kind: 'cap'; cap: number };

export const DEFAULT_ROLLOVER = 'full';

/** null when the text is not a rule. */
export function parseRollover(text: string | undefined): RolloverRule | null {
  const value = (text ?? DEFAULT_ROLLOVER).trim().toLowerCase();
  if (value === 'full') return { kind: 'full' };
  if (value === 'none') return { kind: 'none' };
  const cap = /^cap:(\d{1,9})$/.exec(value);
  return cap ? { kind: 'cap', cap: Number(cap[1]) } : null;
}

/** The plan credits that expire when an allowance closes with `planRemaining` unspent. */
export function expiringCredits(rule: RolloverRule, planRemaining: number): number {
  const unspent = Math.max(0, planRemaining);
  if (rule.kind === 'none') return unspent;
  if (rule.kind === 'cap') return Math.max(0, unspent - rule.cap);
  return 0;
}

/** Whether unspent plan credits of this rule ever expire (plan_expires_at is null when they do not). */
export const expires = (rule: RolloverRule): boolean => rule.kind !== 'full';
