import { createHash, randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { AppError, ValidationError } from '../../common/errors/app-error.js';
import { RedisService } from '../../infra/redis/redis.service.js';

/** Completed responses stay replayable this long (the spec's job-result retention). */
export const REPLAY_TTL_SECONDS = 24 * 3600;
const KEY_PATTERN = /^[A-Za-z0-9._~:-]{1,128}$/;

/** A key sent again with a different request body (IETF draft-ietf-httpapi-idempotency-key-header: 422). */
export class IdempotencyKeyMismatchError extends AppError {
  readonly status = 422;
  readonly title = 'Idempotency key reused';
  constructor() {
    super(
      'idempotency_key_mismatch',
      'This Idempotency-Key was already used with a different request body. Send a new key.',
    );
  }
}

/**
 * The job id of a metered request. Without a key every request is a new job. With a key the job id is
 * derived from the user and the key, so a retry of the same request meets UNIQUE(job_id, kind) and is
 * never charged twice; keys of different users never collide.
 */
export function meteredJobId(userId: string, idempotencyKey: string | undefined): string {
  if (idempotencyKey === undefined) return `ai-${randomUUID()}`;
  // Structured-header form ("...") as in the IETF draft, or a bare token as most APIs take it.
  const key = idempotencyKey.trim().replace(/^"(.*)"$/, '$1');
  if (!KEY_PATTERN.test(key)) {
    throw new ValidationError(
      'Idempotency-Key must be 1 to 128 characters from A-Z a-z 0-9 . _ ~ : -',
      [{ field: 'Idempotency-Key', message: 'invalid idempotency key' }],
      'invalid_idempotency_key',
    );
  }
  return `ai-${userId}-${key}`;
}

/** Fingerprint of what the request asks for; a retry must match it. */
export function requestHash(payload: unknown): string {
  return createHash('sha256').update(JSON.stringify(payload)).digest('hex');
}

interface StoredResponse<T> {
  request_hash: string;
  body: T;
}

/** Responses of keyed requests, kept in Redis for 24 h so a retry gets the same answer without a charge. */
@Injectable()
export class ReplayStore {
  private readonly logger = new Logger(ReplayStore.name);

  constructor(private readonly redis: RedisService) {}

  async save<T>(jobId: string, hash: string, body: T): Promise<void> {
    const value: StoredResponse<T> = { request_hash: hash, body };
    await this.redis.client
      .set(this.redis.key('ai', 'replay', jobId), JSON.stringify(value), 'EX', REPLAY_TTL_SECONDS)
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
