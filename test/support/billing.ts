import { randomUUID } from 'node:crypto';
import { createUser } from '../factories/user.factory.js';
import type { User } from '../../src/generated/prisma/client.js';
import { CheckoutTokenService } from '../../src/modules/billing/actions/checkout-token.service.js';
import { paddleSignature } from '../../src/modules/billing/intake/paddle-signature.js';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { FakeBillingApi } from '../fakes/billing-api.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from './test-env.js';
import { type Delivered, withOutcome } from './webhooks.js';

export const PRICE = { PRO: 'pri_pro', TEAM: 'pri_team' } as const;
export const DAY = 86_400_000;

export type PaddleStatus = 'active' | 'trialing' | 'past_due' | 'paused' | 'canceled';

export interface SubscriptionEventInput {
  type: string;
  subId: string;
  status?: PaddleStatus;
  priceId?: string;
  occurredAt?: Date;
  eventId?: string;
  /** Checkout token in custom_data; null leaves custom_data out. */
  token?: string | null;
  customerId?: string | null;
  periodStart?: Date;
  /** null: no current billing period (paused, canceled immediately). */
  periodEnd?: Date | null;
  canceledAt?: Date | null;
  pausedAt?: Date | null;
  scheduledChange?: { action: string; effective_at: string; resume_at: string | null } | null;
  unitAmount?: string;
  /** The price's and the subscription's billing cycle (Paddle `billing_cycle`); monthly by default. */
  billingCycle?: { interval: string; frequency: number };
}

export const newEventId = () => `evt_${randomUUID().replaceAll('-', '')}`;
export const newSubId = () => `sub_${randomUUID().replaceAll('-', '').slice(0, 20)}`;

/** A Paddle Billing-shaped subscription event. */
export function subscriptionEvent(input: SubscriptionEventInput) {
  const occurredAt = input.occurredAt ?? new Date();
  const periodStart = input.periodStart ?? new Date(occurredAt.getTime() - DAY);
  const periodEnd =
    input.periodEnd === undefined ? new Date(occurredAt.getTime() + 29 * DAY) : input.periodEnd;
  return {
    event_id: input.eventId ?? newEventId(),
    event_type: input.type,
    occurred_at: occurredAt.toISOString(),
    notification_id: `ntf_${randomUUID()}`,
    data: {
      id: input.subId,
      status: input.status ?? 'active',
      customer_id: input.customerId === undefined ? `ctm_${input.subId}` : input.customerId,
      currency_code: 'USD',
      billing_cycle: input.billingCycle ?? { interval: 'month', frequency: 1 },
      items: [
        {
          quantity: 1,
          status: 'active',
          price: {
            id: input.priceId ?? PRICE.PRO,
            unit_price: { amount: input.unitAmount ?? '1500', currency_code: 'USD' },
            billing_cycle: input.billingCycle ?? { interval: 'month', frequency: 1 },
          },
        },
      ],
      current_billing_period:
        periodEnd === null
          ? null
          : { starts_at: periodStart.toISOString(), ends_at: periodEnd.toISOString() },
      scheduled_change: input.scheduledChange ?? null,
      canceled_at: input.canceledAt?.toISOString() ?? null,
      paused_at: input.pausedAt?.toISOString() ?? null,
      custom_data: input.token ? { checkout_token: input.token } : null,
    },
  };
}

export function transactionEvent(input: {
  txnId?: string;
  subId?: string | null;
  origin?: string;
  priceId?: string;
  total?: string;
  customerId?: string | null;
  token?: string | null;
  occurredAt?: Date;
  eventId?: string;
}) {
  const occurredAt = input.occurredAt ?? new Date();
  return {
    event_id: input.eventId ?? newEventId(),
    event_type: 'transaction.completed',
    occurred_at: occurredAt.toISOString(),
    notification_id: `ntf_${randomUUID()}`,
    data: {
      id: input.txnId ?? `txn_${randomUUID().replaceAll('-', '').slice(0, 20)}`,
      status: 'completed',
      customer_id: input.customerId ?? (input.subId ? `ctm_${input.subId}` : null),
      subscription_id: input.subId ?? null,
      origin: input.origin ?? 'subscription_recurring',
      currency_code: 'USD',
      billed_at: occurredAt.toISOString(),
      items: [{ price: { id: input.priceId ?? PRICE.PRO }, quantity: 1 }],
      details: {
        totals: {
          subtotal: input.total ?? '1500',
          tax: '0',
          total: input.total ?? '1500',
          currency_code: 'USD',
        },
      },
      custom_data: input.token ? { checkout_token: input.token } : null,
    },
  };
}

export function adjustmentEvent(input: {
  type?: 'adjustment.created' | 'adjustment.updated';
  adjId: string;
  txnId: string;
  subId?: string | null;
  action?: string;
  status?: string;
  total?: string;
  updatedAt?: Date;
  occurredAt?: Date;
}) {
  const occurredAt = input.occurredAt ?? new Date();
  return {
    event_id: newEventId(),
    event_type: input.type ?? 'adjustment.created',
    occurred_at: occurredAt.toISOString(),
    notification_id: `ntf_${randomUUID()}`,
    data: {
      id: input.adjId,
      action: input.action ?? 'refund',
      type: 'full',
      status: input.status ?? 'pending_approval',
      transaction_id: input.txnId,
      subscription_id: input.subId ?? null,
      customer_id: input.subId ? `ctm_${input.subId}` : null,
      currency_code: 'USD',
      totals: {
        subtotal: input.total ?? '1500',
        tax: '0',
        total: input.total ?? '1500',
        currency_code: 'USD',
      },
      created_at: occurredAt.toISOString(),
      updated_at: (input.updatedAt ?? occurredAt).toISOString(),
    },
  };
}

/** `Paddle-Signature` for a raw body; pass extra h1 values to mimic a secret rotation. */
export function signatureFor(
  rawBody: string,
  options: { secret?: string; ts?: number; extra?: string[] } = {},
): string {
  const ts = options.ts ?? Math.floor(Date.now() / 1000);
  const h1 = paddleSignature(options.secret ?? TEST_SECRETS.BILLING_WEBHOOK_SECRET, ts, rawBody);
  return [`ts=${ts}`, ...(options.extra ?? []).map((s) => `h1=${s}`), `h1=${h1}`].join(';');
}

/**
 * POSTs a signed event to /webhooks/billing exactly as the provider would, without waiting for the worker.
 */
export function send(api: ApiApp, event: object, options: { signature?: string; rawBody?: string } = {}) {
  const raw = options.rawBody ?? JSON.stringify(event);
  return api.http
    .post('/webhooks/billing')
    .set('Content-Type', 'application/json')
    .set('Paddle-Signature', options.signature ?? signatureFor(raw))
    .send(raw);
}

/**
 * send(), then, when the event was accepted, waits until the worker applied it: `outcome` is what it made of
 * it (processed, skipped, failed), or duplicate / refused. The test's worker must be running.
 */
export async function deliver(
  api: ApiApp,
  event: object,
  options: { signature?: string; rawBody?: string } = {},
): Promise<Delivered> {
  const res = await send(api, event, options);
  const raw = options.rawBody ?? JSON.stringify(event);
  let eventId: string | undefined;
  try {
    eventId = (JSON.parse(raw) as { event_id?: string }).event_id;
  } catch {
    eventId = undefined;
  }
  return withOutcome(api, 'billing', eventId, res);
}

export function checkoutToken(api: ApiApp, user: User, tier = 'PRO', now?: Date): string {
  return api.app.get(CheckoutTokenService).issue(user.id, tier, now).token;
}

/** Credits granted to a user by grant rows (the ledger, not the cache). */
export async function grants(api: ApiApp, userId: string) {
  return api.prisma.creditTransaction.findMany({
    where: { userId, kind: 'grant' },
    orderBy: { createdAt: 'asc' },
  });
}

/** A fresh user and the subscription.created its checkout (a signed checkout token) leads to, not sent. */
export async function checkoutCreated(api: ApiApp, tier: 'PRO' | 'TEAM' = 'PRO', occurredAt?: Date) {
  const user = await createUser(api.prisma);
  const subId = newSubId();
  const created = subscriptionEvent({
    type: 'subscription.created',
    subId,
    priceId: PRICE[tier],
    token: checkoutToken(api, user, tier),
    occurredAt,
  });
  return { user, subId, created };
}

/** A user with a subscription created through a signed checkout token, as a real checkout would. */
export async function subscribe(
  api: ApiApp,
  tier: 'PRO' | 'TEAM' = 'PRO',
  at = new Date(Date.now() - 60_000),
) {
  const { user, subId, created } = await checkoutCreated(api, tier, at);
  const res = await deliver(api, created);
  if (res.status !== 200) throw new Error(`created answered ${res.status}: ${JSON.stringify(res.body)}`);
  return { user, subId, created, at };
}

/** Short reads of what the webhooks wrote; `app` is read lazily (the app starts in beforeAll). */
export function lookups(app: () => ApiApp) {
  const api = new Proxy({} as ApiApp, { get: (_t, key) => app()[key as keyof ApiApp] });
  return {
    userRow: (id: string) => api.prisma.user.findUniqueOrThrow({ where: { id } }),
    subRow: (subId: string) =>
      api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } }),
    archived: (eventId: string) =>
      api.prisma.webhookEvent.findUnique({ where: { provider_eventId: { provider: 'billing', eventId } } }),
    audits: (action: string, resourceId?: string) =>
      api.prisma.auditLog.findMany({ where: { action, ...(resourceId ? { resourceId } : {}) } }),
  };
}

/**
 * A test world whose billing provider API is the local Paddle-shaped fake (`BILLING_API_URL`/`_KEY` set, so
 * the backfill and the drift check are on), with the API and a worker whose provider retries are fast.
 */
export async function billingApiWorld(extraEnv: Record<string, string> = {}): Promise<{
  env: TestEnv;
  api: ApiApp;
  worker: INestApplication;
  billing: FakeBillingApi;
}> {
  const billing = await FakeBillingApi.start();
  const env = await TestEnv.create({
    env: { BILLING_API_URL: billing.url, BILLING_API_KEY: 'pdl_test_key', ...extraEnv },
  });
  env.onClose(() => billing.close());
  const api = await env.startApi();
  const worker = await env.startWorker();
  worker.get(HttpClient).backoffBaseMs = 5;
  return { env, api, worker, billing };
}
