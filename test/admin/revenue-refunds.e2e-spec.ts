import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { deliver, newEventId } from '../support/billing.js';
import { type Json, fixture, newSuffix, rebase } from '../contracts/contract-support.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

const OVERVIEW = '/api/v1/admin/metrics/overview';
const DAY = 86_400_000;

type PaddleEvent = { event_id: string; event_type: string; occurred_at: string; data: Json };

/**
 * The overview's 30-day refunds through the real webhook path: Paddle's own transaction.completed and
 * adjustment.updated notifications (paddle-node-sdk fixtures), signed and applied by the worker, then read
 * back from GET /admin/metrics/overview with the real clock. Each story is in its own currency, so one
 * answer shows them all. Decision "refunds capped per transaction" (docs/decisions/admin-metrics.md).
 */
describe('GET /admin/metrics/overview: refunds never exceed what a transaction collected', () => {
  let env: TestEnv;
  let api: ApiApp;
  const t0 = Date.now();
  const ago = (days: number, ms = 0) => new Date(t0 - days * DAY + ms);

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    await env.startWorker();
  });
  afterAll(() => env.close());

  /** Paddle's transaction.completed (a one-off "web" checkout, no subscription) for `total` minor units. */
  function payment(input: { total: number; currency: string; at: Date }) {
    const event = rebase(fixture<PaddleEvent>('paddle', 'node-sdk.transaction-completed'), {
      suffix: newSuffix(),
      shiftMs: 0,
    });
    const data = event.data as Json & { details: { totals: Json } };
    event.occurred_at = input.at.toISOString();
    data.billed_at = input.at.toISOString();
    data.currency_code = input.currency;
    data.details.totals = {
      ...data.details.totals,
      total: String(input.total),
      currency_code: input.currency,
    };
    return { event, txnId: data.id as string };
  }

  /** Paddle's adjustment.updated, approved, for our transaction (or one we never saw). */
  function adjustment(input: {
    txnId: string;
    total: number;
    currency: string;
    at: Date;
    action?: string;
    type?: 'full' | 'partial';
    adjId?: string;
  }) {
    const event = rebase(fixture<PaddleEvent>('paddle', 'node-sdk.adjustment-updated'), {
      suffix: newSuffix(),
      shiftMs: 0,
    });
    const data = event.data as Json & { totals: Json };
    event.occurred_at = new Date(input.at.getTime() + 1000).toISOString();
    Object.assign(data, {
      ...(input.adjId ? { id: input.adjId } : {}),
      transaction_id: input.txnId,
      subscription_id: null,
      action: input.action ?? 'refund',
      type: input.type ?? 'full',
      status: 'approved',
      currency_code: input.currency,
      created_at: input.at.toISOString(),
      updated_at: new Date(input.at.getTime() + 1000).toISOString(),
    });
    data.totals = { ...data.totals, total: String(input.total), currency_code: input.currency };
    return event;
  }

  async function apply(...events: PaddleEvent[]) {
    for (const event of events) expect((await deliver(api, event)).outcome).toBe('processed');
  }

  it('counts per transaction at most its payment, in (occurred_at, adjustment id) order, earlier refunds first', async () => {
    // USD: a full refund, then the same refund redelivered under a new adjustment id (and a replay of it).
    const usd = payment({ total: 1500, currency: 'USD', at: ago(10) });
    const second = adjustment({ txnId: usd.txnId, total: 1500, currency: 'USD', at: ago(4) });
    await apply(
      usd.event,
      adjustment({ txnId: usd.txnId, total: 1500, currency: 'USD', at: ago(5) }),
      second,
    );
    await apply({ ...second, event_id: newEventId() });

    // EUR: paid and partly refunded before the window; the full refund inside it counts what was left.
    const eur = payment({ total: 1000, currency: 'EUR', at: ago(50) });
    await apply(
      eur.event,
      adjustment({ txnId: eur.txnId, total: 400, currency: 'EUR', at: ago(40), type: 'partial' }),
      adjustment({ txnId: eur.txnId, total: 1000, currency: 'EUR', at: ago(3) }),
    );

    // GBP: two refunds at the same instant, ordered by adjustment id: the full one (…a) takes it all and the
    // partial one (…b) is capped to 0 and left out, count included. A chargeback is not a refund.
    const gbp = payment({ total: 1000, currency: 'GBP', at: ago(9) });
    const tie = `adj_01h8c6tbrkpdd7vx61w7b1r0ap${newSuffix()}`;
    await apply(
      gbp.event,
      adjustment({
        txnId: gbp.txnId,
        total: 300,
        currency: 'GBP',
        at: ago(2),
        adjId: `${tie}b`,
        type: 'partial',
      }),
      adjustment({ txnId: gbp.txnId, total: 1000, currency: 'GBP', at: ago(2), adjId: `${tie}a` }),
      adjustment({ txnId: gbp.txnId, total: 1000, currency: 'GBP', at: ago(1), action: 'chargeback' }),
    );

    // JPY: refunds of a transaction we have no payment for count as recorded (nothing to cap against).
    const unknownTxn = `txn_01h8dzxgkvdwemdhbpcapj2tbj${newSuffix()}`;
    await apply(
      adjustment({ txnId: unknownTxn, total: 500, currency: 'JPY', at: ago(6), type: 'partial' }),
      adjustment({ txnId: unknownTxn, total: 500, currency: 'JPY', at: ago(5), type: 'partial' }),
    );

    // CHF: a refund in another currency than its payment (SEK) cannot be compared with it: capped to 0, and
    // it leaves the payment's room to the CHF refund after it.
    const chf = payment({ total: 1000, currency: 'CHF', at: ago(8) });
    await apply(
      chf.event,
      adjustment({ txnId: chf.txnId, total: 800, currency: 'SEK', at: ago(3) }),
      adjustment({ txnId: chf.txnId, total: 1000, currency: 'CHF', at: ago(2) }),
    );

    // Every adjustment is recorded as Paddle sent it: only the metrics cap.
    expect(
      await api.prisma.billingAdjustment.count({ where: { action: 'refund', status: 'approved' } }),
    ).toBe(10);

    const res = await api.http
      .get(OVERVIEW)
      .set('Authorization', await api.bearer('user_admin', 'admin@example.com'));
    expect(res.status).toBe(200);
    const { revenue, refunds, net } = res.body.revenue.last_30_days;
    expect(revenue).toEqual({
      USD: { amount: 1500, count: 1 },
      GBP: { amount: 1000, count: 1 },
      CHF: { amount: 1000, count: 1 },
    });
    expect(refunds).toEqual({
      USD: { amount: 1500, count: 1 },
      EUR: { amount: 600, count: 1 },
      GBP: { amount: 1000, count: 1 },
      JPY: { amount: 1000, count: 2 },
      CHF: { amount: 1000, count: 1 },
    });
    expect(net).toEqual({ USD: 0, EUR: -600, GBP: 0, JPY: -1000, CHF: 0 });
  });
});
