import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { User } from '../../src/generated/prisma/client.js';
import { addMonths } from '../../src/modules/billing/jobs/allowance-months.js';
import { AllowanceService } from '../../src/modules/billing/jobs/allowance.service.js';
import { fixture } from '../contracts/contract-support.js';
import { createUser } from '../factories/user.factory.js';
import {
  checkoutToken,
  deliver,
  newEventId,
  newSubId,
  PRICE,
  subscriptionEvent,
  transactionEvent,
} from './billing.js';
import type { ApiApp } from './test-env.js';

/** Paddle's published annual plan (`Annual plan`, the subscription.trialing mock): billed every year. */
type Published = { data: { billing_cycle: { interval: string; frequency: number } } };
export const YEARLY = fixture<Published>('paddle', 'node-sdk.subscription-trialing').data.billing_cycle;

export interface AnnualPeriod {
  user: User;
  subId: string;
  start: Date;
  /** The first payment's transaction id. */
  txnId: string;
  /** Job id of month `index` of the period (1..11; month 0 is `first-period:<subId>`). */
  month: (index: number) => string;
  /** The allowance job an hour after month `index`'s anniversary. */
  runAt: (index: number) => Promise<unknown>;
}

/**
 * A subscription on Paddle's yearly cycle created `start` (a day ago by default), with its first payment
 * of `total` minor units recorded then, signed events through the receiver.
 */
export async function annualPeriod(
  api: ApiApp,
  options: { tier?: 'PRO' | 'TEAM'; start?: Date; total: number },
): Promise<AnnualPeriod> {
  const tier = options.tier ?? 'PRO';
  const start = options.start ?? new Date(Date.now() - 86_400_000);
  const user = await createUser(api.prisma);
  const subId = newSubId();
  const created = subscriptionEvent({
    type: 'subscription.created',
    subId,
    priceId: PRICE[tier],
    billingCycle: YEARLY,
    token: checkoutToken(api, user, tier),
    occurredAt: start,
    periodStart: start,
    periodEnd: addMonths(start, 12),
  });
  expect((await deliver(api, created)).outcome).toBe('processed');
  const payment = transactionEvent({
    subId,
    origin: 'web',
    priceId: PRICE[tier],
    total: String(options.total),
    occurredAt: start,
  });
  expect((await deliver(api, payment)).outcome).toBe('processed');
  const month = (index: number) => `allowance:${subId}:${start.toISOString()}:${index}`;
  const runAt = (index: number) =>
    api.app.get(AllowanceService).run(new Date(addMonths(start, index).getTime() + 3_600_000));
  return { user, subId, start, txnId: payment.data.id, month, runAt };
}

export type AdjustmentAction = 'refund' | 'chargeback' | 'chargeback_reverse';

/**
 * Paddle's own adjustment.updated (paddle-node-sdk fixture) for `txnId`, approved, with a fresh adjustment
 * id unless `adjId` is given. The event to deliver (a redelivery reuses it with a new event id).
 */
export function paddleAdjustment(
  sub: { subId: string | null; txnId: string },
  input: { type: 'full' | 'partial'; total: number; action?: AdjustmentAction; adjId?: string },
) {
  const event = fixture<{ event_id: string; occurred_at: string; data: Record<string, unknown> }>(
    'paddle',
    'node-sdk.adjustment-updated',
  );
  const adjId = input.adjId ?? `adj_${randomUUID().replaceAll('-', '').slice(0, 20)}`;
  event.event_id = newEventId();
  event.occurred_at = new Date().toISOString();
  Object.assign(event.data, {
    id: adjId,
    transaction_id: sub.txnId,
    subscription_id: sub.subId,
    customer_id: sub.subId ? `ctm_${sub.subId}` : null,
    action: input.action ?? 'refund',
    type: input.type,
    status: 'approved',
    created_at: new Date(Date.now() - 60_000).toISOString(),
    updated_at: new Date().toISOString(),
  });
  event.data.totals = { ...(event.data.totals as object), total: String(input.total) };
  return event;
}

/** Delivers paddleAdjustment(...) and expects it processed; returns the adjustment id. */
export async function adjust(
  api: ApiApp,
  sub: { subId: string | null; txnId: string },
  input: { type: 'full' | 'partial'; total: number; action?: AdjustmentAction; adjId?: string },
): Promise<string> {
  const event = paddleAdjustment(sub, input);
  expect((await deliver(api, event)).outcome).toBe('processed');
  return event.data.id as string;
}
