import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { newSubId, PRICE, send, subscriptionEvent } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/**
 * Issue 15 item 4: what the frontend sees. After checkout the provider's webhook is answered `accepted` at
 * once and the worker applies it; `/me` shows the new tier without any other call. How fast is measured by
 * `npm run bench` (lag figure), not asserted here.
 */
describe('billing: after checkout, /me shows the new tier once the worker applied the webhook', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    await env.startWorker();
  });
  afterAll(() => env.close());

  it('checkout token -> signed subscription.created -> 200 accepted -> /me turns PRO with its credits', async () => {
    const auth = await api.bearer('user_checkout_flow', 'checkout-flow@example.com');
    const me = () => api.http.get('/api/v1/me').set('Authorization', auth);
    expect((await me()).body).toMatchObject({ current_tier: 'FREE', credit_balance: 0 });

    const issued = await api.http
      .post('/api/v1/billing/checkout-token')
      .set('Authorization', auth)
      .send({ tier: 'PRO' });
    expect(issued.status).toBe(200);
    const event = subscriptionEvent({
      type: 'subscription.created',
      subId: newSubId(),
      priceId: PRICE.PRO,
      token: issued.body.token,
    });
    const res = await send(api, event);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, status: 'accepted' });

    const body = await waitFor(
      async () => {
        const current = (await me()).body;
        return current.current_tier === 'PRO' ? current : null;
      },
      10_000,
      20,
    );
    expect(body).toMatchObject({
      current_tier: 'PRO',
      credit_balance: 1000,
      subscription: { status: 'ACTIVE' },
    });
    // A second checkout is now refused: one live subscription per user.
    const again = await api.http
      .post('/api/v1/billing/checkout-token')
      .set('Authorization', auth)
      .send({ tier: 'TEAM' });
    expect(again.status).toBe(409);
  });
});
