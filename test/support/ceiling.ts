/**
 * Where the rate ceiling let requests reach the provider too early, as the provider saw them. Each request
 * reserves the shared next slot in Redis (one interval after the previous reservation, never before the
 * reservation itself) and does not leave before it, so the k-th request to arrive (k from 0) arrives no
 * earlier than k intervals after `start`, a Date.now() taken before any of them reserved a slot. A request
 * that a loaded machine delivers late only delays itself, so this cannot flake the way gaps between arrival
 * times do; a burst, or a ceiling kept per process (two requests in one slot), breaks it by whole intervals.
 * Returns the offending arrivals (empty when the ceiling held).
 */
export function earlyArrivals(
  arrivals: number[],
  start: number,
  requestsPerSecond: number,
): { k: number; afterStartMs: number; slotMs: number }[] {
  const intervalMs = 1000 / requestsPerSecond;
  // Redis TIME and Date.now() read the same clock; Date.now() truncates and a timer may fire a millisecond
  // early: a few milliseconds of slack, far below one interval.
  const slackMs = 5;
  return [...arrivals]
    .sort((x, y) => x - y)
    .map((at, k) => ({ k, afterStartMs: at - start, slotMs: Math.round(k * intervalMs) }))
    .filter((arrival) => arrival.afterStartMs < arrival.slotMs - slackMs);
}
