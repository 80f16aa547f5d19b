import { z } from 'zod';

// Paddle Billing-shaped webhook bodies (DESIGN.md section 4). Objects are loose: the provider adds
// fields over time and we archive the raw payload anyway; only what we use is required and typed.

// JavaScript parses dates PostgreSQL cannot store (before 4713 BC, extended years): such a date would fail
// the insert (a 500 retried forever). Provider timestamps are modern, so years outside 1900..9999 are refused.
const EARLIEST = Date.UTC(1900, 0, 1);
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const timestamp = z
  .string()
  .refine((value) => {
    const ms = Date.parse(value);
    return ms >= EARLIEST && ms <= LATEST;
  }, 'expected an ISO 8601 date-time between the years 1900 and 9999')
  .transform((value) => new Date(value));

/**
 * Paddle writes Go's zero time, `0001-01-01T00:00:00Z`, for a date that was never set (an adjustment not
 * yet updated): it means null, like `null` itself (DESIGN.md 5c "real payloads").
 */
export const PADDLE_UNSET_DATE = /^0001-01-01T00:00:00(\.0+)?(Z|[+-]00:?00)$/;

/** A date the provider may leave unset: null, absent or the zero time all read as null. */
const optionalTimestamp = z.preprocess(
  (value) => (typeof value === 'string' && PADDLE_UNSET_DATE.test(value) ? null : value),
  timestamp.nullish().transform((v) => v ?? null),
);

const INT4_MAX = 2_147_483_647;

/**
 * An ISO 4217 code: three letters (upper-cased). Anything else (`u$d`, digits) would split the revenue
 * metrics into a bogus currency, so it is refused as an invalid payload.
 */
const currency = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'expected a three-letter ISO 4217 currency code')
  .transform((v) => v.toUpperCase());

/** A currency the provider may leave unset (Paddle's sandbox sends `null` on a failed renewal's items). */
const optionalCurrency = currency.nullish().transform((v) => v ?? null);

/**
 * Paddle amounts are strings in minor units ("1000" = 10.00), never negative (a refund is an adjustment
 * with a positive total). Stored as 32-bit integers.
 */
const minorUnits = z
  .string()
  .regex(/^\d{1,10}$/, 'expected a non-negative integer amount in minor units')
  .transform(Number)
  .refine((n) => n <= INT4_MAX, 'amount out of range');

/**
 * The price of one unit of a subscription: at most 100,000,000 minor units (1,000,000.00 in a two-decimal
 * currency). A larger unit price is not a plan a small team sells; it would only poison MRR.
 */
export const MAX_UNIT_PRICE = 100_000_000;
const unitPrice = minorUnits.refine((n) => n <= MAX_UNIT_PRICE, `unit price above ${MAX_UNIT_PRICE}`);

/** Seats on one subscription item: at most 10,000 (the row stores a 32-bit integer; 2^31 failed the insert). */
export const MAX_QUANTITY = 10_000;

const id = z.string().min(1).max(200);
const optionalId = id.nullish().transform((v) => v ?? null);

/**
 * Intervals in one billing cycle: at most 999, Paddle's own limit on a price (it refuses a larger one with
 * `price_billing_cycle_frequency_greater_than_maximum`). The row stores a 32-bit integer: 3,000,000,000 was
 * accepted, then failed the insert and was retried until FAILED.
 */
export const MAX_BILLING_FREQUENCY = 999;

const billingCycle = z.looseObject({
  interval: z.string().min(1).max(20),
  frequency: z.number().int().positive().max(MAX_BILLING_FREQUENCY),
});

/** Event envelope: just enough to claim, archive and dispatch; the data is checked per event type. */
export const envelopeSchema = z.looseObject({
  event_id: id,
  event_type: z.string().min(1).max(100),
  occurred_at: z.unknown().optional(),
  notification_id: z.string().nullish(),
  data: z.unknown(),
});

export const occurredAtSchema = timestamp;

export const subscriptionSchema = z.looseObject({
  id,
  status: z.enum(['active', 'trialing', 'past_due', 'paused', 'canceled']),
  customer_id: optionalId,
  currency_code: optionalCurrency,
  billing_cycle: billingCycle.nullish(),
  items: z
    .array(
      z.looseObject({
        quantity: z.number().int().positive().max(MAX_QUANTITY).nullish(),
        price: z.looseObject({
          id,
          unit_price: z.looseObject({ amount: unitPrice, currency_code: optionalCurrency }).nullish(),
          billing_cycle: billingCycle.nullish(),
        }),
      }),
    )
    .min(1),
  current_billing_period: z.looseObject({ starts_at: timestamp, ends_at: timestamp }).nullish(),
  scheduled_change: z
    .looseObject({
      action: z.string().min(1).max(50),
      effective_at: timestamp,
      resume_at: optionalTimestamp,
    })
    .nullish(),
  canceled_at: optionalTimestamp,
  paused_at: optionalTimestamp,
  custom_data: z.record(z.string(), z.unknown()).nullish(),
});

export const transactionSchema = z.looseObject({
  id,
  status: z.string().min(1).max(50),
  customer_id: optionalId,
  subscription_id: optionalId,
  origin: z.string().max(50).nullish(),
  currency_code: optionalCurrency,
  billed_at: optionalTimestamp,
  billing_period: z
    .looseObject({ starts_at: optionalTimestamp, ends_at: optionalTimestamp })
    .nullish()
    .transform((v) => v ?? null),
  items: z
    .array(
      z.looseObject({
        price: z.looseObject({ id }).nullish(),
        quantity: z.number().int().positive().max(MAX_QUANTITY).nullish(),
      }),
    )
    .nullish()
    .transform((v) => v ?? []),
  details: z.looseObject({
    totals: z.looseObject({ total: minorUnits, currency_code: optionalCurrency }),
  }),
  custom_data: z.record(z.string(), z.unknown()).nullish(),
});

export const adjustmentSchema = z.looseObject({
  id,
  action: z.string().min(1).max(50),
  /** `full` or `partial` (Paddle); a full refund claws back everything the transaction granted. */
  type: z.string().max(50).nullish(),
  status: z.string().min(1).max(50),
  transaction_id: optionalId,
  subscription_id: optionalId,
  customer_id: optionalId,
  currency_code: optionalCurrency,
  totals: z.looseObject({ total: minorUnits, currency_code: optionalCurrency }),
  created_at: optionalTimestamp,
  updated_at: optionalTimestamp,
});

export type SubscriptionData = z.output<typeof subscriptionSchema>;
export type TransactionData = z.output<typeof transactionSchema>;
export type AdjustmentData = z.output<typeof adjustmentSchema>;

/** A verified event whose envelope parsed; `data` is still unchecked. */
export interface BillingEvent {
  eventId: string;
  eventType: string;
  occurredAt: Date;
  data: unknown;
  /** The audit actor of its effects: `webhook:billing` unless it came another way (`system:backfill`). */
  actor?: string;
}
