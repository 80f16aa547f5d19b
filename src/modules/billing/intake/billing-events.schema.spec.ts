import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import {
  adjustmentSchema,
  MAX_BILLING_FREQUENCY,
  subscriptionSchema,
  transactionSchema,
} from './billing-events.schema.js';

// Paddle's own published payloads (test/contracts/fixtures/README.md lists their sources).
const DIR = join(process.cwd(), 'test/contracts/fixtures/paddle');
const load = (name: string) => JSON.parse(readFileSync(join(DIR, name), 'utf8')) as { data: unknown };
/** The notification's data: python-sdk simulation payloads are the data alone, the others whole events. */
const dataOf = (name: string): unknown => (name.includes('.simulations.') ? load(name) : load(name).data);

describe('billing event schemas accept what the Paddle SDKs accept', () => {
  const files = readdirSync(DIR).filter((name) => name.endsWith('.json'));

  it.each(
    files.filter((name) =>
      /subscription-(created|updated|activated|resumed|paused|past-due|canceled)/.test(name),
    ),
  )('parses subscription data of %s', (name) => {
    expect(subscriptionSchema.safeParse(dataOf(name)).error?.issues ?? []).toEqual([]);
  });

  it.each(files.filter((name) => /transaction-completed/.test(name)))(
    'parses transaction data of %s',
    (name) => {
      expect(transactionSchema.safeParse(dataOf(name)).error?.issues ?? []).toEqual([]);
    },
  );

  it.each(files.filter((name) => /adjustment/.test(name)))('parses adjustment data of %s', (name) => {
    expect(adjustmentSchema.safeParse(dataOf(name)).error?.issues ?? []).toEqual([]);
  });

  it('reads what the credit lifecycle uses: billing period, item quantities, adjustment type', () => {
    const renewal = transactionSchema.parse(dataOf('python-sdk.events.transaction-completed-renewal.json'));
    expect(renewal.billing_period?.starts_at?.toISOString()).toBe('2024-04-24T15:07:40.922Z');
    expect(renewal.items.map((item) => item.quantity)).toEqual([10, 1]);
    expect(transactionSchema.parse(dataOf('node-sdk.transaction-completed.json')).billing_period).toBeNull();
    expect(adjustmentSchema.parse(dataOf('python-sdk.adjustments.full-entity.json')).type).toBe('partial');
    const bad = {
      ...(dataOf('node-sdk.transaction-completed.json') as object),
      items: [{ price: { id: 'p' }, quantity: 0 }],
    };
    expect(transactionSchema.safeParse(bad).success).toBe(false);
  });

  it("bounds a billing cycle's frequency by Paddle's own limit (999), on the subscription and its prices", () => {
    type Cycle = { frequency: number };
    type Data = { billing_cycle: Cycle; items: { price: { billing_cycle: Cycle } }[] };
    const withFrequency = (where: 'subscription' | 'price', frequency: number) => {
      const data = structuredClone(dataOf('node-sdk.subscription-activated.json')) as Data;
      if (where === 'subscription') data.billing_cycle.frequency = frequency;
      else data.items[0].price.billing_cycle.frequency = frequency;
      return subscriptionSchema.safeParse(data).success;
    };
    for (const where of ['subscription', 'price'] as const) {
      expect({ where, ok: withFrequency(where, MAX_BILLING_FREQUENCY) }).toEqual({ where, ok: true });
      expect({ where, ok: withFrequency(where, MAX_BILLING_FREQUENCY + 1) }).toEqual({ where, ok: false });
      expect({ where, ok: withFrequency(where, 3_000_000_000) }).toEqual({ where, ok: false });
    }
  });

  it('reads a null unit_price currency as unset', () => {
    const parsed = subscriptionSchema.parse(
      load('python-sdk.events.subscription-updated-past-due.json').data,
    );
    expect(parsed.items.map((item) => item.price.unit_price?.currency_code)).toEqual([null, null]);
    expect(parsed.items[0].price.unit_price?.amount).toBe(3600);
  });

  it("reads Paddle's 0001-01-01T00:00:00Z as unset, and still refuses other impossible dates", () => {
    const entity = load('python-sdk.adjustments.full-entity.json').data as Record<string, unknown>;
    expect(adjustmentSchema.parse(entity).updated_at).toBeNull();
    expect(
      adjustmentSchema.parse({ ...entity, updated_at: '0001-01-01T00:00:00.000Z' }).updated_at,
    ).toBeNull();
    expect(adjustmentSchema.safeParse({ ...entity, updated_at: '0001-01-02T00:00:00Z' }).success).toBe(false);
    expect(adjustmentSchema.safeParse({ ...entity, updated_at: 'soon' }).success).toBe(false);
    const { updated_at: _omit, ...absent } = entity;
    expect(adjustmentSchema.parse(absent).updated_at).toBeNull();
  });

  it('still validates what the handlers read', () => {
    const data = load('node-sdk.subscription-created.json').data as Record<string, unknown>;
    expect(subscriptionSchema.safeParse({ ...data, status: 'hacked' }).success).toBe(false);
    expect(subscriptionSchema.safeParse({ ...data, items: [] }).success).toBe(false);
  });
});
