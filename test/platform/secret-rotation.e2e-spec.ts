import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CheckoutTokenService } from '../../src/modules/billing/actions/checkout-token.service.js';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { deliver, newSubId, signatureFor, subscriptionEvent } from '../support/billing.js';
import { identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { settled } from '../support/webhooks.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';

const NEW = {
  IDENTITY_WEBHOOK_SECRET: `whsec_${Buffer.from('rotated-identity-webhook-secret-0123456789').toString('base64')}`,
  BILLING_WEBHOOK_SECRET: 'rotated-billing-webhook-secret-0123456789',
  EMAIL_UNSUBSCRIBE_SECRET: 'rotated-unsubscribe-secret-0123456789abcdef',
};
const STRANGER = {
  identity: `whsec_${Buffer.from('some-other-identity-secret-0123456789abc').toString('base64')}`,
  billing: 'some-other-billing-secret-0123456789abcdef',
};

/**
 * Rotating a secret: the new one signs, the previous one (`*_PREVIOUS`) is still accepted during the
 * overlap, anything else is refused. The "old" app below is the deployment before the rotation.
 */
describe('secret rotation with an overlap', () => {
  let env: TestEnv;
  let before: ApiApp;
  let after: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    before = await env.startApi();
    const rotated = env.configWith({
      ...NEW,
      IDENTITY_WEBHOOK_SECRET_PREVIOUS: TEST_SECRETS.IDENTITY_WEBHOOK_SECRET,
      BILLING_WEBHOOK_SECRET_PREVIOUS: TEST_SECRETS.BILLING_WEBHOOK_SECRET,
      EMAIL_UNSUBSCRIBE_SECRET_PREVIOUS: TEST_SECRETS.EMAIL_UNSUBSCRIBE_SECRET,
    });
    after = await env.startApi({ config: rotated });
    // The worker of the rotated deployment applies what its API accepted.
    await env.startWorker({ config: rotated });
  });
  afterAll(() => env.close());

  const identityDelivery = (sub: string, secret: string) =>
    signIdentityEvent(identityUserEvent('user.created', sub, `${sub}@example.com`), { secret });

  it('accepts identity webhooks signed with the new or the previous secret only', async () => {
    for (const [sub, secret, status] of [
      ['user_rot_new', NEW.IDENTITY_WEBHOOK_SECRET, 200],
      ['user_rot_old', TEST_SECRETS.IDENTITY_WEBHOOK_SECRET, 200],
      ['user_rot_bad', STRANGER.identity, 401],
    ] as const) {
      const delivery = identityDelivery(sub, secret);
      const res = await after.http.post('/webhooks/identity').set(delivery.headers).send(delivery.body);
      expect(res.status).toBe(status);
      if (status === 200) await settled(after, 'identity', delivery.id);
    }
    expect(await after.prisma.user.count({ where: { identityUserId: { startsWith: 'user_rot_' } } })).toBe(2);
  });

  it('accepts billing webhooks and checkout tokens of the previous secret during the overlap', async () => {
    const user = await createUser(after.prisma, { identityUserId: 'user_rot_billing' });
    // Minted by the deployment before the rotation.
    const oldToken = before.app.get(CheckoutTokenService).issue(user.id, 'PRO').token;
    expect(after.app.get(CheckoutTokenService).verify(oldToken)).toMatchObject({ ok: true });

    const event = subscriptionEvent({ type: 'subscription.created', subId: newSubId(), token: oldToken });
    const raw = JSON.stringify(event);
    const stranger = await deliver(after, event, {
      signature: signatureFor(raw, { secret: STRANGER.billing }),
    });
    expect(stranger.status).toBe(401);
    const previous = await deliver(after, event, { signature: signatureFor(raw) });
    expect(previous.status).toBe(200);
    expect(previous.outcome).toBe('processed');
    expect(await after.prisma.subscription.count({ where: { userId: user.id } })).toBe(1);

    const renamed = { ...event, event_id: `${event.event_id}x` };
    const rawNew = JSON.stringify(renamed);
    expect(
      (
        await deliver(after, renamed, {
          signature: signatureFor(rawNew, { secret: NEW.BILLING_WEBHOOK_SECRET }),
        })
      ).status,
    ).toBe(200);

    // The deployment before the rotation does not know the new secret.
    const fresh = after.app.get(CheckoutTokenService).issue(user.id, 'PRO').token;
    expect(before.app.get(CheckoutTokenService).verify(fresh)).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('keeps unsubscribe links of mail sent before the rotation working', async () => {
    const user = await createUser(after.prisma, {
      identityUserId: 'user_rot_mail',
      email: 'mail@example.com',
      marketingConsentGiven: true,
    });
    const oldLink = before.app.get(UnsubscribeTokens).sign(user.id);
    const res = await after.http.post(`/api/v1/email/unsubscribe?t=${encodeURIComponent(oldLink)}`);
    expect(res.status).toBe(200);
    expect(
      (await after.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).marketingConsentGiven,
    ).toBe(false);
    // New links are signed with the new key only.
    const newLink = after.app.get(UnsubscribeTokens).sign(user.id);
    expect(before.app.get(UnsubscribeTokens).verify(newLink)).toBeNull();
  });
});
