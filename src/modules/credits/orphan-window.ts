/** Spec: a deduct orphaned for 5 minutes is refunded by a reconciler that runs every 60 s. */
export const ORPHAN_AFTER_MS = 5 * 60_000;
