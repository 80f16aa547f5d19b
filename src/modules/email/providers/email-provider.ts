import type { OutboundEmail } from '../email.types.js';

/** Resend's batch endpoint takes at most 100 messages per call. */
export const MAX_BATCH_SIZE = 100;

/**
 * Why a send failed, as far as the caller's next move is concerned:
 * - `rejected`: the provider refused these messages (400/422 and other 4xx); nothing was sent, and
 *   resending the same thing fails again.
 * - `duplicate`: 409 `invalid_idempotent_request`: the idempotency key was already used for a request
 *   with another body. The provider has accepted a request under this key before (Resend keeps keys
 *   for 24 h), so the message went out then; sending it again under any other key would deliver twice.
 * - `conflict`: any other 409 (Resend: `concurrent_idempotent_requests`, the same key is still being
 *   processed): the outcome is unknown; only a later retry with the same key and body is safe.
 * - `server_error`: the provider answered 5xx after the retries; it may or may not have accepted.
 * - `unavailable`: rate limited after the retries, unreachable, or timed out; the request may or may not
 *   have been accepted, so only a retry with the same idempotency key is safe.
 * - `misconfigured`: our credentials or endpoint are wrong (401/403/404); nothing will get through.
 */
export type SendFailureKind =
  'rejected' | 'duplicate' | 'conflict' | 'server_error' | 'unavailable' | 'misconfigured';

/** `cause`: HttpClient's error, which tells an outage from a refusal (infra/queue/job-failure.ts). */
export class EmailSendError extends Error {
  constructor(
    readonly kind: SendFailureKind,
    readonly httpStatus: number | null,
    message: string,
    cause?: unknown,
  ) {
    super(message, { cause });
    this.name = 'EmailSendError';
  }
}

export interface SendOptions {
  /** Cancels the request (a worker shutting down). */
  signal?: AbortSignal;
  /** At most this many HTTP requests for this call: what is left of the e-mail's budget. */
  maxRequests?: number;
  /** Called before each HTTP request, so the caller can count them durably across job attempts. */
  onRequest?: () => Promise<void>;
}

/** A provider message id, or null when the provider accepted but its answer did not match the contract. */
export interface SendResult {
  id: string | null;
}

/** The e-mail provider port. `console` locally, `resend` (Resend-shaped HTTP API) when deployed. */
export abstract class EmailProvider {
  abstract readonly name: string;

  /** One message; `message.idempotencyKey` makes a retried send deliver once. Throws EmailSendError. */
  abstract send(message: OutboundEmail, options?: SendOptions): Promise<SendResult>;

  /**
   * Up to MAX_BATCH_SIZE messages in one request, all or nothing (Resend's strict batch mode). Results
   * are in request order. Throws EmailSendError.
   */
  abstract sendBatch(
    messages: OutboundEmail[],
    idempotencyKey: string,
    options?: SendOptions,
  ): Promise<SendResult[]>;
}
