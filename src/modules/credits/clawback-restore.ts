import type { RolloverRule } from './rollover.js';

/**
 * What a claw-back took, by the credits it took them from (recorded in its ledger details when it may be
 * given back: a chargeback's). The rest of what it took (`taken - unspent - purchased`) were credits already
 * spent: the claw-back took the balance below zero by that much.
 */
export interface ClawBackSplit {
  /** Unspent plan credits it took. */
  unspent: number;
  /** Purchased (pack) credits it took. */
  purchased: number;
  /** The plan allowance those plan credits belonged to (users.plan_grant_job_id then); null: none. */
  allowance: string | null;
  /** Unspent plan credits it left. */
  left: number;
  /**
   * Plan credits the user's open reservations held when it ran (metered calls in flight; 0 or absent:
   * none, or a claw-back from before 2026-12-07), and those reservations, `<job id>:<purchased credits
   * held>` separated by spaces: what they give back later fills the hole the claw-back made.
   */
  held?: number;
  holds?: string;
}

/**
 * How a claw-back of `amount` splits over a balance of `balance` credits of which `purchased` were bought in
 * packs: plan credits first, or purchased ones first for a pack's (`purchasedFirst`), as the ledger statement
 * takes them (CreditsRepository, APPLY_SQL); what neither covers takes the balance below zero.
 */
export function splitClawBack(
  before: { balance: number; purchased: number; allowance: string | null },
  amount: number,
  purchasedFirst: boolean,
): ClawBackSplit {
  const plan = Math.max(0, before.balance - before.purchased);
  const purchasedAvailable = Math.max(0, Math.min(before.purchased, before.balance));
  const purchased = purchasedFirst ? Math.min(amount, purchasedAvailable) : 0;
  const unspent = Math.min(amount - purchased, plan);
  const purchasedAfter = purchasedFirst ? purchased : Math.min(amount - unspent, purchasedAvailable);
  return { unspent, purchased: purchasedAfter, allowance: before.allowance, left: plan - unspent };
}

/**
 * What a won chargeback gives back of what its claw-back took (decision "a chargeback the merchant won",
 * docs/decisions/billing.md): everything but the unspent plan credits the rollover rule would have expired
 * since, had they not been taken. Purchased credits never expire, and credits already spent (the balance
 * went below zero) were paid back out of later credits, so both come back in full. The unspent plan
 * credits come back in full while their allowance is still the user's current one (`current`) or under
 * `full`; once a later allowance has closed it, under `none` none of them (they would have expired with it),
 * under `cap:n` what the cap would have kept on top of the unspent plan credits the claw-back left
 * (`n - left`), and none once any close since expired credits (the user's unspent credits were over the cap
 * without them). A claw-back recorded without its split (before 2026-12-07) counts as unspent plan credits
 * of an allowance that has closed. Plan credits held by calls in flight at the claw-back were not in the
 * balance; what those calls gave back since (`returned`) filled the hole first and counts as unspent, so a
 * won chargeback gives back the same whether a call failed just before or just after the chargeback.
 */
export function restorableOf(input: {
  taken: number;
  split: ClawBackSplit | null;
  rule: RolloverRule;
  current: boolean;
  expiredSince: boolean;
  /**
   * Plan credits the reservations open at the claw-back (split `holds`) gave back since: they were
   * unspent plan credits, so the part of the "already spent" share they filled counts as unspent (the rule
   * applies), the rest as unspent credits the claw-back left.
   */
  returned?: number;
}): { restorable: number; expired: number } {
  const taken = Math.max(0, input.taken);
  const split = input.split ?? { unspent: taken, purchased: 0, allowance: null, left: 0 };
  const spent = Math.max(0, taken - Math.max(0, split.unspent) - Math.max(0, split.purchased));
  const returned = input.split ? Math.max(0, input.returned ?? 0) : 0;
  const filled = Math.min(returned, spent);
  const left = Math.max(0, split.left) + returned - filled;
  const unspent = Math.min(Math.max(0, split.unspent) + filled, taken);
  const kept =
    input.rule.kind === 'full' || (input.split && input.current)
      ? unspent
      : input.rule.kind === 'none' || input.expiredSince
        ? 0
        : Math.min(unspent, Math.max(0, input.rule.cap - left));
  return { restorable: taken - unspent + kept, expired: unspent - kept };
}

/**
 * The part of `restorable` credits due once approved `chargeback_reverse`s returned `reversed` of the
 * `charged` minor units the transaction's chargebacks took: all of it when the whole was reversed, else that
 * share rounded down (the claw-back rounds up, in the merchant's favour; this never gives more).
 */
export function reversedShare(restorable: number, money: { reversed: number; charged: number }): number {
  if (restorable <= 0 || money.reversed <= 0) return 0;
  if (money.charged <= 0 || money.reversed >= money.charged) return restorable;
  return Number((BigInt(restorable) * BigInt(money.reversed)) / BigInt(money.charged));
}
