import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { RedisService } from '../../infra/redis/redis.service.js';

/** Longer than any job's retry schedule, and than the provider's 24 h idempotency window. */
const TTL_SECONDS = 3 * 24 * 3600;

/**
 * How long after its first request a key may be used again: the provider keeps a key 24 h (Resend), less
 * an hour for clock skew between workers and the provider and for a request still in flight at the end.
 */
export const IDEMPOTENCY_WINDOW_MS = 23 * 3600 * 1000;

/** What is left of an e-mail's budget, and why nothing is (the error its `failed` record carries). */
export interface BudgetState {
  /** Requests made so far. */
  used: number;
  /** Requests that may still be made: 0 once the count is reached or the key's window has passed. */
  left: number;
  /** Why no request may be made (null while `left` > 0). */
  spent: string | null;
}

/**
 * Provider requests made for one e-mail (its idempotency key), counted in Redis across job attempts,
 * so the spec's "1 + EMAIL_SEND_RETRIES requests" holds for the e-mail, not for each of BullMQ's
 * attempts (5 x 4 = 20 before). Redis holds the jobs themselves: the count lives as long as they do.
 * A broadcast batch is one request body under one key: it has the same budget (EmailBatchDelivery).
 *
 * The time of a key's first request is kept beside the count: an e-mail whose outcome is still unknown
 * IDEMPOTENCY_WINDOW_MS after it has no request left, since the provider, which has forgotten the key by
 * then, would deliver it a second time.
 */
@Injectable()
export class EmailSendBudget {
  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisService,
  ) {}

  /** The clock (tests move it past the provider's idempotency window). */
  now: () => number = () => Date.now();

  /** Requests one e-mail may make in total. */
  get limit(): number {
    return this.config.email.sendRetries + 1;
  }

  /** The budget of one e-mail: requests made, requests left, and why none is left. */
  async state(idempotencyKey: string, lastAnswer?: string): Promise<BudgetState> {
    const [count, first] = await this.redis.client.mget(
      this.key(idempotencyKey),
      this.firstKey(idempotencyKey),
    );
    const used = Number(count ?? 0);
    const firstAt = first === null ? null : Number(first);
    // A count without its first time (kept by an earlier version for less long than the count) is of a
    // request made at an unknown time, so maybe past the window: treated as past it.
    if (used > 0 && (firstAt === null || this.now() - firstAt >= IDEMPOTENCY_WINDOW_MS)) {
      return { used, left: 0, spent: windowPassedError(used, firstAt, lastAnswer) };
    }
    const left = Math.max(0, this.limit - used);
    return { used, left, spent: left === 0 ? budgetSpentError(used, lastAnswer) : null };
  }

  /**
   * Counts one request, before it is made (a request whose answer is lost still counts). Both keys' expiry
   * moves with each request, in one MULTI, so the first request's time lives exactly as long as the count:
   * set once with its own expiry, it expired first and the count then read as a fresh budget within the
   * window rule's reach, and once both had expired the whole budget came back.
   */
  async count(idempotencyKey: string): Promise<void> {
    const key = this.key(idempotencyKey);
    const firstKey = this.firstKey(idempotencyKey);
    await this.redis.client
      .multi()
      .incr(key)
      .expire(key, TTL_SECONDS)
      .set(firstKey, String(this.now()), 'NX')
      .expire(firstKey, TTL_SECONDS)
      .exec();
  }

  private key(idempotencyKey: string): string {
    return this.redis.key('email', 'requests', idempotencyKey);
  }

  private firstKey(idempotencyKey: string): string {
    return this.redis.key('email', 'first-request', idempotencyKey);
  }
}

/** Why an e-mail is recorded `failed` once its budget is spent: the count and, when known, the last answer. */
export function budgetSpentError(used: number, lastAnswer?: string): string {
  const spent = `gave up after ${used} provider requests (1 + EMAIL_SEND_RETRIES)`;
  return lastAnswer ? `${lastAnswer}; ${spent}` : spent;
}

/** Why an e-mail whose outcome is unknown is not sent again after the provider's idempotency window. */
function windowPassedError(used: number, firstAt: number | null, lastAnswer?: string): string {
  const from = firstAt === null ? 'an unknown time' : new Date(firstAt).toISOString();
  const passed =
    `outcome unknown after ${used} provider request(s) from ${from}; ` +
    'not resent past the provider idempotency window (it could deliver twice)';
  return lastAnswer ? `${lastAnswer}; ${passed}` : passed;
}
