import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import {
  IDEMPOTENCY_KEY_TTL_SECONDS,
  parseIdempotencyKey,
} from '../../common/idempotency/idempotency-key.js';
import { RedisService } from '../../infra/redis/redis.service.js';

/**
 * The job id of a metered request. Without a key every request is a new job. With a key the job id is
 * derived from the user and the key, so a retry of the same request meets UNIQUE(job_id, kind) and is
 * never charged twice; keys of different users never collide.
 */
export function meteredJobId(userId: string, idempotencyKey: string | undefined): string {
  const key = parseIdempotencyKey(idempotencyKey);
  return key === undefined ? `ai-${randomUUID()}` : `ai-${userId}-${key}`;
}

interface StoredResponse<T> {
  request_hash: string;
  body: T;
}

/**
 * Responses of keyed requests, kept in Redis for 24 h so a retry gets the same answer without a charge.
 * Model output is never written to PostgreSQL, so the ledger row (the key's durable record) cannot
 * rebuild it.
 */
@Injectable()
export class ReplayStore {
  private readonly logger = new Logger(ReplayStore.name);

  constructor(private readonly redis: RedisService) {}

  async save<T>(jobId: string, hash: string, body: T): Promise<void> {
    const value: StoredResponse<T> = { request_hash: hash, body };
    await this.redis.client
      .set(this.redis.key('ai', 'replay', jobId), JSON.stringify(value), 'EX', IDEMPOTENCY_KEY_TTL_SECONDS)
      .catch((err: Error) =>
        this.logger.warn({ err: err.message, job_id: jobId }, 'could not store the replay'),
      );
  }

  async load<T>(jobId: string, hash: string): Promise<T | null> {
    const raw = await this.redis.client.get(this.redis.key('ai', 'replay', jobId)).catch(() => null);
    if (!raw) return null;
    const stored = JSON.parse(raw) as StoredResponse<T>;
    return stored.request_hash === hash ? stored.body : null;
  }
}
