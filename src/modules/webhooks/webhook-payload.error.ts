import type { z } from 'zod';
import { ValidationError } from '../../common/errors/app-error.js';

/**
 * A verified webhook body that does not match the provider's contract (or that no archive row can hold):
 * retrying it the same way cannot succeed. One code for every receiver (billing, identity, e-mail), with
 * the first problems named in `errors` when a schema said what is wrong.
 */
export class InvalidWebhookPayloadError extends ValidationError {
  constructor(detail: string, errors: { field: string; message: string }[] = []) {
    super(detail, errors, 'invalid_payload');
  }

  /** The schema's complaints as field errors (`(root)` for the body itself). */
  static fromZod(detail: string, error: z.ZodError): InvalidWebhookPayloadError {
    return new InvalidWebhookPayloadError(
      detail,
      error.issues.map((issue) => ({ field: issue.path.join('.') || '(root)', message: issue.message })),
    );
  }
}
