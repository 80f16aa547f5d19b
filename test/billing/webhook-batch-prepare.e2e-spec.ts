import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { SubscriptionsRepository } from '../../src/modules/billing/subscriptions/subscriptions.repository.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { createUser } from '../factories/user.factory.js';
import { checkoutToken, DAY, newSubId, PRICE, send, subscriptionEvent } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * Issue 15 item 3: a batch of subscription events locks and reads all its subscriptions (and their owners)
 * in one statement before the first event runs. What that read holds must never be used once it may be
 * stale: a second event of the same subscription, or an event of a subscription whose owner an earlier
 * event of the batch wrote, reads again. Driven like webhook-batch-apply: the real intake (no worker runs
 * here) and concurrent WebhookInboxService.apply calls: the first runs alone (nothing is in flight), the
 * rest arrive together and share one transaction (the linger lets it fill), in the order they were called.
 */
describe('billing webhooks: a batch prepared in one statement', () => {
  let env: TestEnv;
  let api: ApiApp;
  let inbox: WebhookInboxService;
  let repository: SubscriptionsRepository;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    inbox = api.app.get(WebhookInboxService);
    repository = api.app.get(SubscriptionsRepository);
  });
  afterAll(() => env.close());

  /** Accepted at intake (RECEIVED): its archive row id. */
  async function stored(event: ReturnType<typeof subscriptionEvent>): Promise<string> {
    const res = await send(api, event);
    expect(res.body).toEqual({ received: true, status: 'accepted' });
    const row = await api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'billing', eventId: event.event_id } },
    });
    return row.id;
  }

  /** Accepted and applied alone. */
  async function applied(event: ReturnType<typeof subscriptionEvent>): Promise<void> {
    expect(await inbox.apply(await stored(event), true)).toEqual({ outcome: 'processed' });
  }

  async function subscribed(userId = '', at = new Date(Date.now() - 10 * DAY)) {
    const user = userId
      ? await api.prisma.user.findUniqueOrThrow({ where: { id: userId } })
      : await createUser(api.prisma);
    const subId = newSubId();
    await applied(
      subscriptionEvent({
        type: 'subscription.created',
        subId,
        priceId: PRICE.PRO,
        token: checkoutToken(api, user, 'PRO'),
        occurredAt: at,
      }),
    );
    return { user, subId, at };
  }

  it('reads once for the batch, and again where an earlier event of the batch wrote the rows', async () => {
    const base = Date.now() - 5 * DAY;
    const fillers = await Promise.all([1, 2, 3, 4].map(() => subscribed()));
    const plain = await Promise.all([1, 2, 3].map(() => subscribed()));
    // S: two events in one batch, the newer first; the older must lose to it (not to the row read before).
    const s = await subscribed();
    // One owner, two subscriptions: A gives access; B was canceled and its period is over.
    const a = await subscribed();
    const b = await subscribed(a.user.id);
    await applied(
      subscriptionEvent({
        type: 'subscription.canceled',
        subId: b.subId,
        status: 'canceled',
        occurredAt: new Date(base),
        periodStart: new Date(base - 30 * DAY),
        periodEnd: new Date(base - DAY),
        canceledAt: new Date(base),
      }),
    );
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: a.user.id } })).currentTier).toBe('PRO');

    const update = (subId: string, at: number, status: 'active' | 'past_due' = 'active') =>
      subscriptionEvent({ type: 'subscription.updated', subId, status, occurredAt: new Date(at) });
    const sNewer = update(s.subId, base + 2000, 'past_due');
    const sOlder = update(s.subId, base + 1000);
    // A ends now (its access with it: the user falls to FREE); then B comes back: PRO again.
    const aEnds = subscriptionEvent({
      type: 'subscription.canceled',
      subId: a.subId,
      status: 'canceled',
      occurredAt: new Date(base + 3000),
      periodStart: new Date(base - 30 * DAY),
      periodEnd: new Date(base - DAY),
      canceledAt: new Date(base + 3000),
    });
    const bReturns = update(b.subId, base + 4000);
    // N: created and updated in the same batch; the update must find the row the created event inserted.
    const nUser = await createUser(api.prisma);
    const nSubId = newSubId();
    const nCreated = subscriptionEvent({
      type: 'subscription.created',
      subId: nSubId,
      priceId: PRICE.PRO,
      token: checkoutToken(api, nUser, 'PRO'),
      occurredAt: new Date(base),
    });
    const nUpdated = update(nSubId, base + 1000, 'past_due');
    const batch = [
      sNewer,
      sOlder,
      aEnds,
      bReturns,
      nCreated,
      nUpdated,
      ...plain.map((p) => update(p.subId, base + 5000)),
    ];
    const alone = fillers.map((f) => update(f.subId, base + 5000));
    const ids = [];
    for (const event of [...alone, ...batch]) ids.push(await stored(event));

    const many = jest.spyOn(repository, 'lockAndFindMany');
    const outcomes = await Promise.all(ids.map((id) => inbox.apply(id, false)));
    const calls = many.mock.calls.map(([, asked]) => [...asked]);
    many.mockRestore();

    expect(outcomes.map((o) => o.outcome)).toEqual([
      ...alone.map(() => 'processed'),
      'processed',
      'skipped',
      'processed',
      'processed',
      'processed',
      'processed',
      ...plain.map(() => 'processed'),
    ]);

    const sRow = await api.prisma.subscription.findUniqueOrThrow({
      where: { providerSubscriptionId: s.subId },
    });
    expect(sRow).toMatchObject({ status: 'PAST_DUE', lastEventId: sNewer.event_id });
    expect(
      await api.prisma.webhookEvent.findUniqueOrThrow({
        where: { provider_eventId: { provider: 'billing', eventId: sOlder.event_id } },
      }),
    ).toMatchObject({ status: 'SKIPPED', error: 'stale_event' });
    expect(
      await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: b.subId } }),
    ).toMatchObject({ status: 'ACTIVE', expiredAt: null });
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: a.user.id } })).currentTier).toBe('PRO');
    for (const p of plain) {
      expect(
        await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: p.subId } }),
      ).toMatchObject({ status: 'ACTIVE', lastEventAt: new Date(base + 5000) });
    }
    expect(
      await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: nSubId } }),
    ).toMatchObject({ userId: nUser.id, status: 'PAST_DUE', lastEventId: nUpdated.event_id });

    // One statement for the batch's subscriptions; one more each for S's and N's second event (the first
    // wrote the row) and for B (its owner was written by A's event); none for the others.
    const batchRead = calls.find((asked) => asked.length > 1);
    expect(batchRead).toEqual(
      expect.arrayContaining([s.subId, a.subId, b.subId, nSubId, ...plain.map((p) => p.subId)]),
    );
    const readAgain = (subId: string) =>
      calls.filter((asked) => asked.length === 1 && asked[0] === subId).length;
    expect([s.subId, b.subId, nSubId, a.subId, ...plain.map((p) => p.subId)].map(readAgain)).toEqual([
      1,
      1,
      1,
      0,
      ...plain.map(() => 0),
    ]);
  });
});
