import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { type ApiApp, TEST_SECRETS } from './test-env.js';
import { type Delivered, withOutcome } from './webhooks.js';

const FIXTURES = new URL('../contracts/fixtures/resend/', import.meta.url);

export type ResendFixture =
  'email-bounced' | 'email-complained' | 'email-delivered' | 'email-delivery-delayed';

/**
 * One of Resend's published webhook examples (test/contracts/fixtures/resend, see its README), tied to a
 * message the test sent: `data.email_id` becomes that message's provider id and `data.to` its recipient.
 * Its times move by one amount so that the event happened at `at` (default: now), after the message was
 * sent, as a real one does (the published examples are from 2024).
 */
export function resendEvent(
  fixture: ResendFixture,
  target: { providerMessageId: string; to: string },
  options: { bounceType?: 'Permanent' | 'Transient'; at?: Date } = {},
): { type: string; created_at: string; data: Record<string, unknown> } {
  const event = JSON.parse(readFileSync(new URL(`webhook.${fixture}.json`, FIXTURES), 'utf8')) as {
    type: string;
    created_at: string;
    data: Record<string, unknown> & { bounce?: Record<string, unknown>; created_at?: string };
  };
  const shiftMs = (options.at ?? new Date()).getTime() - Date.parse(event.created_at);
  const shifted = (iso: string) => new Date(Date.parse(iso) + shiftMs).toISOString();
  event.created_at = shifted(event.created_at);
  if (typeof event.data.created_at === 'string') event.data.created_at = shifted(event.data.created_at);
  event.data.email_id = target.providerMessageId;
  event.data.to = [target.to];
  if (options.bounceType && event.data.bounce) event.data.bounce.type = options.bounceType;
  return event;
}

export interface SignedEmailDelivery {
  id: string;
  body: string;
  headers: Record<string, string>;
}

/** Signs like Svix does for Resend: `svix-id`, `svix-timestamp`, `svix-signature: v1,<base64>`. */
export function signEmailEvent(
  event: object | string,
  options: { id?: string; secret?: string; timestamp?: Date } = {},
): SignedEmailDelivery {
  const id = options.id ?? `msg_${randomUUID().replace(/-/g, '')}`;
  const timestamp = options.timestamp ?? new Date();
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const signature = new Webhook(options.secret ?? TEST_SECRETS.EMAIL_WEBHOOK_SECRET).sign(
    id,
    timestamp,
    body,
  );
  return {
    id,
    body,
    headers: {
      'content-type': 'application/json',
      'svix-id': id,
      'svix-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'svix-signature': signature,
    },
  };
}

/** POSTs a signed delivery to /webhooks/email and waits until the worker applied it (`outcome`). */
export async function deliverEmailEvent(api: ApiApp, delivery: SignedEmailDelivery): Promise<Delivered> {
  const res = await api.http.post('/webhooks/email').set(delivery.headers).send(delivery.body);
  return withOutcome(api, 'email', delivery.id, res);
}
