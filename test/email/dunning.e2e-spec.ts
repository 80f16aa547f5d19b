import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { FakeBillingApi } from '../fakes/billing-api.js';
import { billingApiWorld, DAY, deliver, send, subscribe, subscriptionEvent } from '../support/billing.js';
import type { ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const UPDATE_URL = 'https://buyer.paddle.com/subscriptions/sub_x/update-payment-method?token=pga_test';

describe('dunning e-mails: payment_failed (with the update-payment link), payment_recovered, subscription_ended', () => {
  let env: TestEnv;
  let api: ApiApp;
  let billing: FakeBillingApi;

  beforeAll(async () => {
    ({ env, api, billing } = await billingApiWorld());
  });
  afterAll(() => env.close());

  const mails = (userId: string, templateKey: string) =>
    api.prisma.emailMessage.findMany({ where: { userId, templateKey, status: 'sent' } });
  const settledMail = (userId: string, templateKey: string) =>
    waitFor(async () => {
      const rows = await mails(userId, templateKey);
      return rows.length > 0 ? rows : null;
    }, 10_000);

  it('past_due delivered 10 times concurrently sends one payment_failed e-mail with the link fetched from the billing API', async () => {
    const { user, subId, at } = await subscribe(api);
    // Paddle's notifications carry no management_urls; the subscription entity of its API does.
    billing.seedEntity({
      id: subId,
      status: 'past_due',
      items: [{ price: { id: 'pri_pro' }, quantity: 1 }],
      management_urls: { update_payment_method: UPDATE_URL, cancel: 'https://buyer.paddle.com/cancel' },
    });
    const pastDue = subscriptionEvent({
      type: 'subscription.past_due',
      subId,
      status: 'past_due',
      occurredAt: new Date(at.getTime() + 1000),
      periodStart: new Date(at.getTime() + 1000),
      periodEnd: new Date(at.getTime() + 30 * DAY),
    });
    const answers = await Promise.all(Array.from({ length: 10 }, () => send(api, pastDue)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    // A second event of the same episode (another event id, same state) sends nothing either.
    const updated = { ...pastDue, event_id: `${pastDue.event_id}b`, event_type: 'subscription.updated' };
    await deliver(api, updated);

    const [failed] = await settledMail(user.id, 'payment_failed');
    expect(failed.text).toContain(UPDATE_URL);
    expect(failed.html).toContain(UPDATE_URL.replace(/&/g, '&amp;'));
    expect(answers.filter((a) => (a.body as { status: string }).status === 'accepted')).toHaveLength(1);
    expect(await mails(user.id, 'payment_failed')).toHaveLength(1);
    const apiCalls = billing.requests.filter((r) => r.method === 'GET' && r.path.includes(subId));
    expect(apiCalls.length).toBeGreaterThanOrEqual(1);

    // Back to active: payment_recovered, once.
    const active = subscriptionEvent({
      type: 'subscription.updated',
      subId,
      status: 'active',
      occurredAt: new Date(at.getTime() + 2000),
      periodStart: new Date(at.getTime() + 1000),
      periodEnd: new Date(at.getTime() + 30 * DAY),
    });
    await Promise.all([deliver(api, active), deliver(api, active)]);
    await settledMail(user.id, 'payment_recovered');
    expect(await mails(user.id, 'payment_recovered')).toHaveLength(1);
    expect(await mails(user.id, 'subscription_ended')).toHaveLength(0);
  });

  it('a cancellation while past due sends subscription_ended; the link comes from the event when it has one', async () => {
    const { user, subId, at } = await subscribe(api);
    const pastDue = subscriptionEvent({
      type: 'subscription.past_due',
      subId,
      status: 'past_due',
      occurredAt: new Date(at.getTime() + 1000),
    }) as ReturnType<typeof subscriptionEvent> & { data: Record<string, unknown> };
    pastDue.data.management_urls = { update_payment_method: `${UPDATE_URL}&from=event`, cancel: null };
    await deliver(api, pastDue);
    const [failed] = await settledMail(user.id, 'payment_failed');
    expect(failed.text).toContain(`${UPDATE_URL}&from=event`);

    const canceled = subscriptionEvent({
      type: 'subscription.canceled',
      subId,
      status: 'canceled',
      occurredAt: new Date(at.getTime() + 2000),
      canceledAt: new Date(at.getTime() + 2000),
      periodEnd: null,
    });
    await deliver(api, canceled);
    await deliver(api, { ...canceled, event_id: `${canceled.event_id}b` });
    await settledMail(user.id, 'subscription_ended');
    expect(await mails(user.id, 'subscription_ended')).toHaveLength(1);
    expect(await mails(user.id, 'payment_recovered')).toHaveLength(0);
  });
});
