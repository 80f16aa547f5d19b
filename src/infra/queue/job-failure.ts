import type { Job } from 'bullmq';
import { DependencyError } from '../../common/errors/app-error.js';
import { isDependencyFailure } from '../../common/errors/dependency-failure.js';
import { isRetryableStatus, ProviderHttpError } from '../http/http-client.js';

/**
 * Start of the failure reason BullMQ records for an attempt that failed because something it depends on
 * was unavailable. The relay and the broadcast sweep read it from a job that failed for good: such a
 * job is pushed again later instead of being given up (docs/decisions/faults.md, "Outage longer than the
 * attempts").
 */
export const OUTAGE_MARK = 'dependency unavailable: ';

/**
 * How long after its outbox row was written a job that failed on an outage is still pushed again. The
 * provider's idempotency window (Resend: 24 h) keeps a re-run from sending twice within it, and BullMQ
 * keeps completed jobs as long.
 */
export const OUTAGE_RETRY_WINDOW_MS = 24 * 3600 * 1000;

/** The relay's first re-push of a job that failed on an outage, and the longest wait between two later ones. */
const OUTAGE_REPUSH_FIRST_WAIT_MS = 10_000;
const OUTAGE_REPUSH_MAX_WAIT_MS = 10 * 60_000;

/**
 * How long after its last push a job that failed on an outage waits before the relay pushes it again,
 * given the pushes so far (the outbox entry's `attempts`, the first push included): none after the first
 * push, then 10 s, doubling up to 10 minutes. Without it a job failing on a long outage
 * was pushed again at the first relay pass after its attempts (about every 40 s) for up to 24 h, each run
 * hitting a dependency that is down; with it a job makes about 150 runs in the window instead of 2,000.
 */
export function outageRepushDelayMs(pushes: number): number {
  if (pushes <= 1) return 0;
  return Math.min(OUTAGE_REPUSH_FIRST_WAIT_MS * 2 ** Math.min(pushes - 2, 20), OUTAGE_REPUSH_MAX_WAIT_MS);
}

/**
 * For a job that failed on an outage and is pushed again where no outbox entry counts its pushes (the
 * broadcast sweep for a run without one, the scheduler's catch-up of a tick): the data of the next push,
 * or null while the backoff (outageRepushDelayMs) since this push lasts. The pushes so far travel in the
 * job's own data (`outagePushes`; absent: the first push) and this push's time is BullMQ's `timestamp`,
 * the same count and clock the relay reads from its entry's `attempts` and `dispatched_at`.
 */
export function nextOutagePush(job: Job, now = Date.now()): Record<string, unknown> | null {
  const data = (job.data ?? {}) as Record<string, unknown>;
  const pushes = typeof data.outagePushes === 'number' && data.outagePushes >= 1 ? data.outagePushes : 1;
  if (now - job.timestamp < outageRepushDelayMs(pushes)) return null;
  return { ...data, outagePushes: pushes + 1 };
}

/** True when `test` holds for the error, one of its causes or a member of an AggregateError in them. */
function inChain(err: unknown, test: (e: object) => boolean, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  if (test(err)) return true;
  if (err instanceof AggregateError && err.errors.some((e) => inChain(e, test, depth + 1))) return true;
  return inChain((err as { cause?: unknown }).cause, test, depth + 1);
}

const isOutage = (err: object): boolean => {
  if (err instanceof ProviderHttpError) return isRetryableStatus(err.httpStatus);
  if (err instanceof DependencyError && err.code === 'upstream_unreachable') return true;
  return isDependencyFailure(err);
};

/**
 * An outage rather than a fault of the job: a store unreachable (isDependencyFailure), a provider that
 * stayed unreachable or kept answering 429/5xx through HttpClient's own retries. Read through the causes
 * (the e-mail provider's EmailSendError and the billing client's `billing_unavailable` carry HttpClient's
 * error, a broadcast's interruption carries the EmailSendError) and the members of an AggregateError (the
 * user hooks of a job: one outage among them makes a later run worth it; every job is safe to run again).
 */
export function isOutageFailure(err: unknown): boolean {
  return inChain(err, isOutage);
}

/** The error an attempt records: an outage gets OUTAGE_MARK in front of its message, anything else as thrown. */
export function markOutage(err: unknown): unknown {
  if (!isOutageFailure(err)) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (message.startsWith(OUTAGE_MARK)) return err;
  return new Error(`${OUTAGE_MARK}${message}`, { cause: err });
}

/** True when a failure reason (BullMQ's `failedReason`) is an outage's (markOutage). */
export const isOutageReason = (reason: string | undefined): boolean => !!reason?.startsWith(OUTAGE_MARK);

/** True for a job whose last attempt failed on an outage: it may be pushed again. */
export const failedOnOutage = (job: Job): boolean => isOutageReason(job.failedReason);

/**
 * What to do with a job that failed for good, whose work was asked for at `since` (its outbox entry, its
 * broadcast run): `again` (failed on an outage within OUTAGE_RETRY_WINDOW_MS: remove it and push it again),
 * `given_up` (failed on an outage, past the window), null (failed for another reason).
 */
export function afterOutage(job: Job, since: Date): 'again' | 'given_up' | null {
  if (!failedOnOutage(job)) return null;
  return Date.now() - since.getTime() <= OUTAGE_RETRY_WINDOW_MS ? 'again' : 'given_up';
}
