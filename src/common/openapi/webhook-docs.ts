import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse } from '@nestjs/swagger';
import { ApiErrors } from './api-errors.decorator.js';

// The providers' request bodies and signature headers as the receivers accept them. The bodies are the
// providers' (only what the receivers read is listed; more members are allowed and archived); the
// examples are shortened from the published fixtures in test/contracts/fixtures.

const receipt = (withEventId: boolean) => ({
  type: 'object',
  required: ['received', 'status', ...(withEventId ? ['event_id'] : [])],
  properties: {
    received: { type: 'boolean', enum: [true] },
    ...(withEventId ? { event_id: { type: 'string', example: 'msg_2bH9XhZxQkzN3q7Lw5tYcVdE1fG' } } : {}),
    status: {
      type: 'string',
      enum: ['accepted', 'duplicate'],
      description:
        'accepted: stored, the worker applies it shortly; duplicate: this event was accepted before.',
    },
  },
});

/**
 * What every receiver answers besides its success: a bad signature is refused before anything is stored, a
 * verified body that breaks the provider's contract is refused and traced (a `webhook.failed` entry), and a
 * receiver whose secret is unset refuses every delivery with 503 (nothing stored), so the provider retries
 * until it is configured; a store that is down is a 503 too.
 */
const ApiWebhookErrors = (
  notConfigured: 'billing_not_configured' | 'webhook_not_configured',
  secretName: string,
  signature: string,
) =>
  ApiErrors({
    400: {
      invalid_payload:
        'a verified body that breaks the provider contract (not JSON, no event id, a payload off its schema): archived as FAILED, or traced in the audit log when no archive row can hold it',
    },
    401: { invalid_signature: `${signature}, nothing stored` },
    503: {
      [notConfigured]: `${secretName} is not set, nothing stored`,
      dependency_unavailable: 'the database is unavailable (the provider retries)',
    },
  });

/** POST /webhooks/billing: Paddle Billing events, `Paddle-Signature: ts=...;h1=...`. */
export const ApiBillingWebhook = () =>
  applyDecorators(
    ApiHeader({
      name: 'Paddle-Signature',
      required: true,
      description:
        '`ts=<unix seconds>;h1=<hex HMAC-SHA256 of "ts:body" with BILLING_WEBHOOK_SECRET>`; stale (over 5 minutes) or wrong signatures are refused with 401.',
      schema: {
        type: 'string',
        example: 'ts=1671552777;h1=eb4d0dc8853be92b7f063b9f3ba5233eb920a09459b6e6b2c26705b4364db151',
      },
    }),
    ApiBody({
      description: 'A Paddle Billing event (subscription.*, transaction.*, adjustment.*, customer.*).',
      schema: {
        type: 'object',
        required: ['event_id', 'event_type', 'data'],
        additionalProperties: true,
        properties: {
          event_id: { type: 'string', example: 'evt_01h7ht60jy5hpdv5x8tfsaxje4' },
          event_type: { type: 'string', example: 'subscription.created' },
          occurred_at: { type: 'string', format: 'date-time', example: '2023-08-11T08:07:38.334150Z' },
          notification_id: { type: ['string', 'null'], example: 'ntf_01h7ht60n4grsa2a5ddd54h1j0' },
          data: {
            type: 'object',
            additionalProperties: true,
            description: 'The entity; subscriptions carry `custom_data.checkout_token` from the checkout.',
          },
        },
        example: {
          event_id: 'evt_01h7ht60jy5hpdv5x8tfsaxje4',
          event_type: 'subscription.created',
          occurred_at: '2023-08-11T08:07:38.334150Z',
          notification_id: 'ntf_01h7ht60n4grsa2a5ddd54h1j0',
          data: {
            id: 'sub_01h7ht5z5wdg9pz18jx1fagp8k',
            status: 'active',
            customer_id: 'ctm_01h7ht5xm7m4rdzbjm4bhvmn3f',
            custom_data: { checkout_token: 'ct_9b2f0c4e51d74a368f0e2d6c1a7b3e95.d3c1f0' },
            items: [{ price: { id: 'pri_01gsz8x8sawmvhz1pv30nge1ke' }, quantity: 1 }],
          },
        },
      },
    }),
    ApiOkResponse({
      description: 'Stored (or a duplicate); the worker applies it shortly.',
      schema: receipt(false),
    }),
    ApiWebhookErrors(
      'billing_not_configured',
      'BILLING_WEBHOOK_SECRET',
      'missing, stale or wrong Paddle-Signature',
    ),
    ApiErrors({
      500: {
        webhook_processing_failed:
          'the verified event could not be stored for a reason other than the database being down (the provider retries)',
      },
    }),
  );

const standardWebhookHeader = (
  part: 'id' | 'timestamp' | 'signature',
  description: string,
  example: string,
) =>
  ApiHeader({
    name: `webhook-${part}`,
    required: true,
    description: `${description} The \`svix-${part}\` header is accepted instead.`,
    schema: { type: 'string', example },
  });

/**
 * The three Standard Webhooks (Svix) signature headers, signed with the named secret, and the 503 of a
 * receiver without it (StandardWebhooksVerifier).
 */
export const ApiStandardWebhookHeaders = (secretName: string) =>
  applyDecorators(
    ApiWebhookErrors('webhook_not_configured', secretName, 'bad, missing or expired signature'),
    standardWebhookHeader('id', 'The delivery id (the event id).', 'msg_2bH9XhZxQkzN3q7Lw5tYcVdE1fG'),
    standardWebhookHeader('timestamp', 'Unix seconds; more than 5 minutes off is refused.', '1732435200'),
    standardWebhookHeader(
      'signature',
      `Space-separated \`v1,<base64 HMAC-SHA256 of "id.timestamp.body">\` signatures with ${secretName}.`,
      'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    ),
  );

/** POST /webhooks/identity: Clerk events signed per Standard Webhooks (Svix). */
export const ApiIdentityWebhook = () =>
  applyDecorators(
    ApiStandardWebhookHeaders('IDENTITY_WEBHOOK_SECRET'),
    ApiBody({
      description:
        'A Clerk event: user.created, user.updated or user.deleted (others are archived and skipped).',
      schema: {
        type: 'object',
        required: ['type', 'data'],
        additionalProperties: true,
        properties: {
          type: { type: 'string', example: 'user.created' },
          object: { type: 'string', example: 'event' },
          timestamp: {
            type: 'integer',
            description: 'Milliseconds since the epoch.',
            example: 1654012591835,
          },
          data: { type: 'object', additionalProperties: true },
        },
        example: {
          type: 'user.created',
          object: 'event',
          timestamp: 1654012591835,
          data: {
            id: 'user_29w83sxmDNGwOuEthce5gg56FcC',
            primary_email_address_id: 'idn_29w83yL7CwVlJXylYLxcslromF1',
            email_addresses: [
              {
                id: 'idn_29w83yL7CwVlJXylYLxcslromF1',
                email_address: 'example@example.org',
                verification: { status: 'verified', strategy: 'ticket' },
              },
            ],
            updated_at: 1654012591835,
          },
        },
      },
    }),
    ApiOkResponse({
      description: 'Stored (or a duplicate); the worker applies it shortly.',
      schema: receipt(true),
    }),
  );
