import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { RedisService } from '../../infra/redis/redis.service.js';

/** Longer than any job's retry schedule, and than the provider's 24 h idempotency window. */
const TTL_SECONDS = 3 * 24 * 3600;

/**
 * Provider requests made for one e-mail (its idempotency key), counted in Redis across job attempts,
 * so the spec's "1 + EMAIL_SEND_RETRIES requests" holds for the e-mail, not for each of BullMQ's
 * attempts (5 x 4 = 20 before). Redis holds the jobs themselves: the count lives as long as they do.
 * A broadcast batch is one request body under one key: it has the same budget (EmailBatchDelivery).
 */
@Injectable()
export class EmailSendBudget {
  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisService,
  ) {}

  /** Requests one e-mail may make in total. */
  get limit(): number {
    return this.config.email.sendRetries + 1;
  }

  async used(idempotencyKey: string): Promise<number> {
    return Number((await this.redis.client.get(this.key(idempotencyKey))) ?? 0);
  }

  /** Counts one request, before it is made (a request whose answer is lost still counts). */
  async count(idempotencyKey: string): Promise<void> {
    const key = this.key(idempotencyKey);
    await this.redis.client.multi().incr(key).expire(key, TTL_SECONDS).exec();
  }

  private key(idempotencyKey: string): string {
    return this.redis.key('email', 'requests', idempotencyKey);
  }
}

/** Why an e-mail is recorded `failed` once its budget is spent: the count and, when known, the last answer. */
export function budgetSpentError(used: number, lastAnswer?: string): string {
  const spent = `gave up after ${used} provider requests (1 + EMAIL_SEND_RETRIES)`;
  return lastAnswer ? `${lastAnswer}; ${spent}` : spent;
}
