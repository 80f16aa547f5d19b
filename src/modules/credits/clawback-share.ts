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
