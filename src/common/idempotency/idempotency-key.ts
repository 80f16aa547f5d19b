import { createHash } from 'node:crypto';
import { AppError, ValidationError } from '../errors/app-error.js';

/**
 * The Idempotency-Key rule shared by every route that takes the header (POST /api/v1/ai/completions,
 * POST /api/v1/admin/broadcasts): its syntax, the 400 of a malformed key, the request fingerprint and the
 * 422 of a key sent again with another request. Where a route keeps its keys (the credit ledger, the
 * broadcast run) is the route's own; docs/decisions/credits.md "Idempotency-Key".
 */

/** The request header (as Express names it: lower case). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** Set to `true` on the stored answer of an earlier request with the same key. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** How long a key is kept at least: the spec's job-result retention. */
export const IDEMPOTENCY_KEY_TTL_SECONDS = 24 * 3600;

export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._~:-]{1,128}$/;

/**
 * The key of a request, or undefined without the header. The structured-header form (`"key"`, IETF
 * draft-ietf-httpapi-idempotency-key-header) names the same key as the bare token most APIs take;
 * anything outside 1 to 128 of `A-Z a-z 0-9 . _ ~ : -` is 400 `invalid_idempotency_key`.
 */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const key = header.trim().replace(/^"(.*)"$/, '$1');
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw new ValidationError(
      'Idempotency-Key must be 1 to 128 characters from A-Z a-z 0-9 . _ ~ : -',
      [{ field: 'Idempotency-Key', message: 'invalid idempotency key' }],
      'invalid_idempotency_key',
    );
  }
  return key;
}

/** Fingerprint of what the request asks for (build `payload` from normalised values); a retry must match it. */
export function requestHash(payload: unknown): string {
  return createHash('sha256').update(JSON.stringify(payload)).digest('hex');
}

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

/** Throws 422 `idempotency_key_mismatch` unless the key's first request had the fingerprint `hash`. */
export function assertSameRequest(storedHash: string | null | undefined, hash: string): void {
  if (storedHash !== hash) throw new IdempotencyKeyMismatchError();
}

/** The answer of a keyed route: `replayed` when it is the first request's answer, sent again. */
export interface IdempotentOutcome<T> {
  body: T;
  replayed: boolean;
}
