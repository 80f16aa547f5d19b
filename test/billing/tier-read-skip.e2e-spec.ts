import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { SubscriptionStatus } from '../../src/generated/prisma/client.js';
import { grantsAccess } from '../../src/modules/billing/subscriptions/subscription-snapshot.js';
import { SubscriptionsRepository } from '../../src/modules/billing/subscriptions/subscriptions.repository.js';
import { createUser } from '../factories/user.factory.js';
import { DAY, deliver, lookups, newSubId, PRICE, subscribe, subscriptionEvent } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * Issue 15 item 3: an event that leaves the subscription granting exactly the tier the user holds does not
 * re-read the user's subscriptions to derive users.current_tier (BillingTierService.afterChange). The skip
 * is sound only if its in-memory rule (`grantsAccess`) says what the re-read's WHERE says; both are checked.
 */
describe('billing: the tier re-read is skipped when its answer cannot change', () => {
  let env: TestEnv;
  let api: ApiApp;
  const { userRow } = lookups(() => api);

  /** Every statement any pg client of this process sends (the worker applies in this process). */
  const sent: string[] = [];
  const originalQuery = pg.Client.prototype.query;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    await env.startWorker();
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const config = args[0] as { text?: string } | string;
      sent.push(typeof config === 'string' ? config : (config?.text ?? ''));
      return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof originalQuery;
  });
  afterAll(async () => {
    pg.Client.prototype.query = originalQuery;
    await env.close();
  });

  /** The access-tier read: the user's subscriptions filtered on expired_at and status. */
  const tierReads = () =>
    sent.filter((text) => /FROM "public"\."subscriptions"/.test(text) && /"expired_at" IS NULL/.test(text));

  it('applies a renewal of a single PRO subscription without reading the tiers, and the tier holds', async () => {
    const { user, subId, at } = await subscribe(api, 'PRO');
    expect((await userRow(user.id)).currentTier).toBe('PRO');

    sent.splice(0);
    const renewed = subscriptionEvent({
      type: 'subscription.updated',
      subId,
      priceId: PRICE.PRO,
      occurredAt: new Date(at.getTime() + 1000),
      periodStart: new Date(at.getTime() + 30 * DAY),
      periodEnd: new Date(at.getTime() + 60 * DAY),
    });
    expect((await deliver(api, renewed)).outcome).toBe('processed');
    expect(
      sent.some((text) =>
        // Prisma's model statements quote the table; the driver's do not.
        /(UPDATE|INSERT INTO) ("public"\.)?"?subscriptions"?[\s(]/.test(text),
      ),
    ).toBe(true);
    expect(tierReads()).toEqual([]);
    expect((await userRow(user.id)).currentTier).toBe('PRO');
  });

  it('still re-reads when the event changes what the subscription grants', async () => {
    const { user, subId, at } = await subscribe(api, 'PRO');
    sent.splice(0);
    const canceled = subscriptionEvent({
      type: 'subscription.canceled',
      subId,
      status: 'canceled',
      priceId: PRICE.PRO,
      occurredAt: new Date(at.getTime() + 1000),
      periodEnd: null,
      canceledAt: new Date(at.getTime() + 1000),
    });
    expect((await deliver(api, canceled)).outcome).toBe('processed');
    expect(tierReads().length).toBeGreaterThan(0);
    expect((await userRow(user.id)).currentTier).toBe('FREE');
  });

  it('grantsAccess says what the access-tier query selects, for every kind of stored subscription', async () => {
    const repository = api.app.get(SubscriptionsRepository);
    const user = await createUser(api.prisma);
    const now = new Date();
    const statuses: SubscriptionStatus[] = ['ACTIVE', 'TRIALING', 'PAST_DUE', 'PAUSED', 'CANCELED'];
    // Every status against no instant, the past, exactly now (the boundary: access ends at the period end)
    // and the future.
    const instants = [null, new Date(now.getTime() - DAY), now, new Date(now.getTime() + DAY)];
    let granting = 0;
    for (const status of statuses) {
      for (const expiredAt of instants) {
        for (const currentPeriodEnd of instants) {
          const row = await api.prisma.subscription.create({
            data: {
              userId: user.id,
              providerSubscriptionId: newSubId(),
              status,
              tier: 'PRO',
              priceId: PRICE.PRO,
              expiredAt,
              currentPeriodEnd,
              lastEventAt: now,
            },
          });
          const selected = await api.prisma.$transaction((tx) => repository.accessTiers(tx, user.id, now));
          await api.prisma.subscription.delete({ where: { id: row.id } });
          expect({ status, expiredAt, currentPeriodEnd, grants: grantsAccess(row, now) }).toEqual({
            status,
            expiredAt,
            currentPeriodEnd,
            grants: selected.length === 1,
          });
          if (selected.length === 1) granting++;
        }
      }
    }
    // Both answers occur: live statuses without an expiry, and CANCELED with the period still running.
    expect(granting).toBe(4 * 4 + 1);
  });
});
