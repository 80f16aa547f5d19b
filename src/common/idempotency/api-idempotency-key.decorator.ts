import { applyDecorators } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_PATTERN, IDEMPOTENT_REPLAYED_HEADER } from './idempotency-key.js';

/** The optional `Idempotency-Key` request header; `description` says what a retry with it gets. */
export const ApiIdempotencyKey = (description: string) =>
  applyDecorators(
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description,
      schema: {
        type: 'string',
        pattern: IDEMPOTENCY_KEY_PATTERN.source,
        example: '5f0c2a1e-8d4b-4b8e-9a57-3c1d2e4f6a70',
      },
    }),
  );

/** The `Idempotent-Replayed` response header, for the `headers` of a keyed route's success response. */
export const IDEMPOTENT_REPLAYED_RESPONSE_HEADER = {
  [IDEMPOTENT_REPLAYED_HEADER]: {
    description: '`true` when this is the stored answer of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
};
