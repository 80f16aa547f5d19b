import { AppError } from '../../common/errors/app-error.js';
import { RecordableError } from '../../common/errors/internal-text.js';
import type { z } from 'zod';
import { InvalidWebhookPayloadError } from '../webhooks/webhook-payload.error.js';

/** Bad, stale or missing Paddle-Signature. No WWW-Authenticate: this is not a Bearer endpoint. */
export class InvalidSignatureError extends AppError {
  readonly status = 401;
  readonly title = 'Invalid signature';
  constructor(detail = 'The webhook signature is missing, stale or does not match.') {
    super('invalid_signature', detail);
  }
}

export { InvalidWebhookPayloadError };

/** The handler failed; the provider must retry. Carries no internals. */
export class WebhookProcessingError extends AppError {
  readonly status = 500;
  readonly title = 'Internal server error';
  constructor(cause?: unknown) {
    super('webhook_processing_failed', 'The event could not be processed; it will be retried.', { cause });
  }
}

/**
 * A subscription or payment names a price missing from BILLING_PRICE_TIERS. The webhook fails (5xx) on
 * purpose: the customer paid, so the event must not be dropped; the provider retries it and the retry
 * succeeds once the price is configured.
 */
export class UnknownPriceError extends RecordableError {
  constructor(readonly priceId: string) {
    super(`price ${priceId} is not mapped to a tier (BILLING_PRICE_TIERS)`);
    this.name = 'UnknownPriceError';
  }
}

/** Parses webhook data against a schema, turning a mismatch into a 400 with the first problems named. */
export function parsePayload<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
  throw InvalidWebhookPayloadError.fromZod(
    `${what} does not match the provider contract: ${problems}`,
    parsed.error,
  );
}
