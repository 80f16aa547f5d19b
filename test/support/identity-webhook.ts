import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { fixture, type Json } from '../contracts/contract-support.js';
import { type ApiApp, TEST_SECRETS } from './test-env.js';
import { type Delivered, withOutcome } from './webhooks.js';

export interface SignOptions {
  /** Defaults to the test environment's IDENTITY_WEBHOOK_SECRET. */
  secret?: string;
  /** Message id (the dedupe key); a new one by default. */
  id?: string;
  timestamp?: Date;
  /** `webhook-*` (Standard Webhooks) or `svix-*` (Clerk/Svix) header names. */
  headerSet?: 'webhook' | 'svix';
}

export interface SignedDelivery {
  id: string;
  body: string;
  headers: Record<string, string>;
}

/** Signs an identity event the way the provider does (Standard Webhooks, via the standardwebhooks library). */
export function signIdentityEvent(event: object | string, options: SignOptions = {}): SignedDelivery {
  const id = options.id ?? `msg_${randomUUID().replace(/-/g, '')}`;
  const timestamp = options.timestamp ?? new Date();
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const signature = new Webhook(options.secret ?? TEST_SECRETS.IDENTITY_WEBHOOK_SECRET).sign(
    id,
    timestamp,
    body,
  );
  const prefix = options.headerSet ?? 'webhook';
  return {
    id,
    body,
    headers: {
      'content-type': 'application/json',
      [`${prefix}-id`]: id,
      [`${prefix}-timestamp`]: String(Math.floor(timestamp.getTime() / 1000)),
      [`${prefix}-signature`]: signature,
    },
  };
}

/** A Clerk-shaped user event. */
export function identityUserEvent(
  type: 'user.created' | 'user.updated',
  identityUserId: string,
  email: string,
  options: { verified?: boolean; updatedAt?: number; timestamp?: number } = {},
): object {
  const verification = (verified: boolean) => ({
    status: verified ? 'verified' : 'unverified',
    strategy: 'email_code',
  });
  return {
    type,
    object: 'event',
    timestamp: options.timestamp ?? Date.now(),
    data: {
      id: identityUserId,
      object: 'user',
      ...(options.updatedAt !== undefined ? { updated_at: options.updatedAt } : {}),
      email_addresses: [
        { id: 'idn_secondary', email_address: `other-${email}`, verification: verification(false) },
        { id: 'idn_primary', email_address: email, verification: verification(options.verified ?? true) },
      ],
      primary_email_address_id: 'idn_primary',
      unsafe_metadata: {},
    },
  };
}

export const identityDeletedEvent = (identityUserId: string): object => ({
  type: 'user.deleted',
  object: 'event',
  data: { id: identityUserId, object: 'user', deleted: true },
});

/**
 * POSTs a signed identity delivery and, when accepted, waits until the worker applied it (`outcome`).
 * The test's worker must be running.
 */
export async function deliverIdentity(
  api: ApiApp,
  delivery: SignedDelivery,
  headers: Record<string, string> = {},
): Promise<Delivered> {
  const res = await api.http
    .post('/webhooks/identity')
    .set({ ...delivery.headers, ...headers })
    .send(delivery.body);
  return withOutcome(api, 'identity', delivery.id, res);
}

/**
 * One of Clerk's published `user.*` examples (test/contracts/fixtures/clerk), about the test's identity
 * user: `data.id` replaced and the event made to happen at `at` (default now: the envelope `timestamp` and,
 * for created/updated, `data.updated_at`, the version the handlers compare); created/updated also get
 * `email` as the primary (and only) address.
 */
export function clerkUserEvent(
  type: 'user.created' | 'user.updated' | 'user.deleted',
  identityUserId: string,
  options: { email?: string; at?: Date } = {},
): object {
  const event = fixture<{
    timestamp: number;
    data: Json & { id: string; updated_at?: number; email_addresses?: Json[] };
  }>('clerk', type);
  const at = (options.at ?? new Date()).getTime();
  event.timestamp = at;
  event.data.id = identityUserId;
  if (event.data.email_addresses) {
    event.data.updated_at = at;
    if (options.email) event.data.email_addresses[0].email_address = options.email;
  }
  return event;
}
