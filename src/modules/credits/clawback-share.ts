/**
 * The credits a partial refund takes back of the `granted` credits its payment gave: the refunded share of the
 * payment, `ceil(granted x refunded / paid)`, rounded up (decision "claw-back scope"), never more than all of
 * them nor less than none. Computed on integers: the float ratio rounds up the wrong way when the product is
 * whole (3000 x 70 / 1000 is 210, but 3000 x 0.07 is 210.00000000000003, which rounds up to 211). `share`
 * null (a full refund) or a payment of 0 takes everything.
 */
export function clawBackShare(granted: number, share: { refunded: number; paid: number } | null): number {
  if (granted <= 0) return 0;
  if (!share || share.paid <= 0 || share.refunded >= share.paid) return granted;
  if (share.refunded <= 0) return 0;
  // BigInt: granted (up to 2^31) times an amount in minor units (up to 2^31) may pass 2^53.
  const product = BigInt(granted) * BigInt(share.refunded);
  const paid = BigInt(share.paid);
  return Number((product + paid - 1n) / paid);
}

/**
 * A partial refund's share of a payment whose credits partly expired after earlier refunds were taken back
 * (decision "claw-back scope", docs/decisions/credits.md). The share is of the credits the payment granted
 * at their full amounts (`full`: grants plus what months withheld for refunds), less the expired ones
 * counted at their full-month value: a credit that expired after `reflected` of `paid` minor units were taken
 * back stood for paid / (paid - reflected) credits of a full month. The credits still left of the payment
 * (`left`: granted, not expired, not taken back) say how much that is: they are the share still paid of
 * what did not expire, so the expired part at full value is `full - left x paid / (paid - reflected)`, kept
 * between what expired (it expired before any refund) and what expired scaled to the money still kept (it
 * expired after all of them). The refund then takes `ceil(base x refunded / paid)` of the rest, which for a
 * pool whose credits all reflect the same refunds is `ceil(left x refunded / (paid - reflected))`: what is
 * left keeps what a month granted now keeps. Nothing expired, or no refund taken back before: exactly
 * `clawBackShare(full - expired, share)`, the rule before expiry was counted at full value.
 */
export function expiringClawBackShare(input: {
  full: number;
  expired: number;
  left: number;
  refunded: number;
  paid: number;
  reflected: number;
}): number {
  const { full, expired, left, refunded, paid, reflected } = input;
  const share = { refunded, paid };
  if (expired <= 0 || reflected <= 0 || reflected >= paid || refunded >= paid || left < 0) {
    return clawBackShare(Math.max(full - expired, 0), share);
  }
  if (refunded <= 0) return 0;
  // Every amount times d = paid - reflected, so the expired part at full value stays a whole number.
  const d = BigInt(paid - reflected);
  const p = BigInt(paid);
  const low = BigInt(expired) * d;
  const high = BigInt(expired) * p;
  const estimate = BigInt(full) * d - BigInt(left) * p;
  const expiredAtFull = estimate < low ? low : estimate > high ? high : estimate;
  const base = BigInt(full) * d - expiredAtFull;
  if (base <= 0n) return 0;
  const denominator = p * d;
  return Number((base * BigInt(refunded) + denominator - 1n) / denominator);
}
