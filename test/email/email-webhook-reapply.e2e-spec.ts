import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { AccountDeletionService } from '../../src/modules/users/account-deletion.service.js';
import { WebhookInboxService } from '../../src/modules/webhooks/webhook-inbox.service.js';
import { createMember } from '../factories/audience.factory.js';
import { createUser } from '../factories/user.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { deliverEmailEvent, resendEvent, signEmailEvent } from '../support/email-webhook.js';
import { installRowFault, type RowFault } from '../support/row-fault.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const HOUR = 3_600_000;
const MINUTE = 60_000;
const DAY = 24 * HOUR;

/**
 * The automatic re-apply of events that failed processing (docs/decisions/billing.md, "an event FAILED
 * after its attempts") holds for the e-mail provider's events too, because their handlers converge when
 * applied late: a bounce or complaint still suppresses, a late `delivered` does not undo a bounce, a late
 * complaint does not withdraw a consent given after it, and the erasure of another user leaves a pending
 * bounce to its re-apply. A database fault on the listed messages and addresses stands in for any
 * processing failure; the worker makes 3 attempts 50 ms apart here (TestEnv).
 */
describe('e-mail webhooks: automatic re-apply of events that failed processing', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let fault: RowFault;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({ env: fake.env() });
    env.onClose(() => fake.close());
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    fault = await installRowFault(api.prisma, {
      name: 'reapply_refuse_message',
      table: 'email_messages',
      on: 'UPDATE',
      key: 'NEW.provider_message_id',
    });
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  const inbox = () => worker.get(WebhookInboxService);
  const archived = (eventId: string) =>
    api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'email', eventId } },
    });
  const untilSettled = (eventId: string) =>
    waitFor(async () => {
      const row = await archived(eventId);
      return row.status !== 'RECEIVED' && row.autoReapplies === 1 ? row : null;
    }, 15_000);
  const message = (providerMessageId: string) =>
    api.prisma.emailMessage.findFirstOrThrow({ where: { providerMessageId } });
  const suppression = (address: string) =>
    api.prisma.emailSuppression.findUnique({ where: { email: address.toLowerCase() } });

  /** A welcome e-mail really sent to the user through the fake provider; its provider message id. */
  async function sent(user: User): Promise<string> {
    const outcome = await worker.get(EmailService).sendTemplate({
      userId: user.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-reapply-${user.id}`,
    });
    expect(outcome.status).toBe('sent');
    return outcome.message!.providerMessageId!;
  }

  /** Delivers an event about the message that fails processing; its FAILED row, due again in an hour. */
  async function failing(event: object, providerMessageId: string) {
    await fault.refuse(providerMessageId);
    const delivery = signEmailEvent(event);
    expect((await deliverEmailEvent(api, delivery)).outcome).toBe('failed');
    await fault.lift();
    const row = await archived(delivery.id);
    expect(row).toMatchObject({ status: 'FAILED', autoReapplies: 0 });
    expect(row.retryAt!.getTime() - Date.now()).toBeGreaterThan(HOUR - MINUTE);
    expect(row.retryAt!.getTime() - Date.now()).toBeLessThanOrEqual(HOUR);
    return row;
  }

  it('a permanent bounce that failed processing is re-applied later and suppresses the address', async () => {
    const user = await createMember(api.prisma, 'reapply-bounce', { consent: true });
    const providerId = await sent(user);
    const bounce = await failing(
      resendEvent('email-bounced', { providerMessageId: providerId, to: user.email }),
      providerId,
    );
    expect(await suppression(user.email)).toBeNull();

    expect(await inbox().reapplyDue(bounce.retryAt!)).toBe(1);
    expect(await untilSettled(bounce.eventId)).toMatchObject({ status: 'PROCESSED', retryAt: null });
    expect(await suppression(user.email)).toMatchObject({ reason: 'bounce', sourceEventId: bounce.eventId });
    expect((await message(providerId)).deliveryStatus).toBe('bounced');
    expect(
      await api.prisma.auditLog.findMany({
        where: { action: 'webhook.replayed', resourceId: bounce.eventId },
        select: { actor: true, details: true },
      }),
    ).toEqual([
      {
        actor: 'system:webhook-reapply',
        details: {
          provider: 'email',
          event_id: bounce.eventId,
          event_type: 'email.bounced',
          previous_status: 'FAILED',
          source: 'automatic',
          count: 1,
        },
      },
    ]);
  });

  it('a delivered re-applied after the bounce does not undo it', async () => {
    const user = await createMember(api.prisma, 'reapply-delivered', { consent: true });
    const providerId = await sent(user);
    const target = { providerMessageId: providerId, to: user.email };
    const bouncedAt = new Date(Date.now() - MINUTE);
    const delivered = await failing(
      resendEvent('email-delivered', target, { at: new Date(Date.now() - 2 * MINUTE) }),
      providerId,
    );
    const bounce = signEmailEvent(resendEvent('email-bounced', target, { at: bouncedAt }));
    expect((await deliverEmailEvent(api, bounce)).outcome).toBe('processed');

    expect(await inbox().reapplyDue(delivered.retryAt!)).toBe(1);
    expect(await untilSettled(delivered.eventId)).toMatchObject({
      status: 'SKIPPED',
      error: 'a later delivery status is recorded already',
    });
    expect(await message(providerId)).toMatchObject({
      deliveryStatus: 'bounced',
      deliveryUpdatedAt: bouncedAt,
    });
    expect(await suppression(user.email)).toMatchObject({ reason: 'bounce', sourceEventId: bounce.id });
  });

  it('an older delivery_delayed re-applied after a newer transient bounce changes nothing', async () => {
    const user = await createMember(api.prisma, 'reapply-delayed', { consent: true });
    const providerId = await sent(user);
    const target = { providerMessageId: providerId, to: user.email };
    const softBouncedAt = new Date(Date.now() - MINUTE);
    const delayed = await failing(
      resendEvent('email-delivery-delayed', target, { at: new Date(Date.now() - 2 * MINUTE) }),
      providerId,
    );
    const softBounce = signEmailEvent(
      resendEvent('email-bounced', target, { bounceType: 'Transient', at: softBouncedAt }),
    );
    expect((await deliverEmailEvent(api, softBounce)).outcome).toBe('processed');

    expect(await inbox().reapplyDue(delayed.retryAt!)).toBe(1);
    expect(await untilSettled(delayed.eventId)).toMatchObject({
      status: 'SKIPPED',
      error: 'a later delivery status is recorded already',
    });
    expect(await message(providerId)).toMatchObject({
      deliveryStatus: 'soft_bounced',
      deliveryUpdatedAt: softBouncedAt,
    });
    expect(await suppression(user.email)).toBeNull();
  });

  it('a complaint that failed processing still suppresses and withdraws consent when re-applied', async () => {
    const user = await createMember(api.prisma, 'reapply-complaint', { consent: true });
    const providerId = await sent(user);
    const complaint = await failing(
      resendEvent('email-complained', { providerMessageId: providerId, to: user.email }),
      providerId,
    );
    expect(await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).toMatchObject({
      marketingConsentGiven: true,
    });

    expect(await inbox().reapplyDue(complaint.retryAt!)).toBe(1);
    expect(await untilSettled(complaint.eventId)).toMatchObject({ status: 'PROCESSED' });
    expect(await suppression(user.email)).toMatchObject({
      reason: 'complaint',
      sourceEventId: complaint.eventId,
    });
    expect(await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).toMatchObject({
      marketingConsentGiven: false,
      marketingConsentSource: 'complaint',
      marketingConsentAt: complaint.occurredAt,
    });
    expect((await message(providerId)).deliveryStatus).toBe('complained');
  });

  it('a complaint re-applied after the user gave consent again suppresses, but keeps the newer consent', async () => {
    const user = await createMember(api.prisma, 'reapply-reconsent', { consent: false });
    const providerId = await sent(user);
    const complaint = await failing(
      resendEvent('email-complained', { providerMessageId: providerId, to: user.email }),
      providerId,
    );
    // After the complaint, the user opts in to marketing mail.
    const res = await api.http
      .patch('/api/v1/me')
      .set('Authorization', await api.bearer(user.identityUserId, user.email))
      .send({ marketing_consent_given: true });
    expect(res.status).toBe(200);
    const consented = await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
    expect(consented.marketingConsentGiven).toBe(true);

    expect(await inbox().reapplyDue(complaint.retryAt!)).toBe(1);
    expect(await untilSettled(complaint.eventId)).toMatchObject({ status: 'PROCESSED' });
    // The address is suppressed all the same (an operator may lift it); the consent is the user's newer word.
    expect(await suppression(user.email)).toMatchObject({ reason: 'complaint' });
    expect(await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).toMatchObject({
      marketingConsentGiven: true,
      marketingConsentAt: consented.marketingConsentAt,
      marketingConsentSource: consented.marketingConsentSource,
    });
    expect(
      await api.prisma.emailConsentEvent.count({ where: { userId: user.id, source: 'complaint' } }),
    ).toBe(0);
    const audited = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'email.complaint', userId: user.identityUserId },
    });
    expect(audited.details).toEqual({
      event_id: complaint.eventId,
      source: 'complaint',
      consent_given: true,
      consent_at: consented.marketingConsentAt!.toISOString(),
      reason: 'consent given after the complaint',
    });
  });

  it("keeps another account's bounce waiting for its re-apply when a user who once had the address is erased", async () => {
    // The erased user was mailed at an address they have left since; Bob holds it now.
    const erased = await createUser(api.prisma, { email: 'Left.Reapply@Example.com' });
    await sent(erased);
    await api.prisma.user.update({
      where: { id: erased.id },
      data: { email: `${erased.identityUserId}@example.com`, deletedAt: new Date(Date.now() - 31 * DAY) },
    });
    const bob = await createUser(api.prisma, { email: 'left.reapply@example.com' });
    const bobsMessage = await sent(bob);
    const bounce = await failing(
      resendEvent('email-bounced', { providerMessageId: bobsMessage, to: bob.email }),
      bobsMessage,
    );

    expect((await worker.get(AccountDeletionService).hardDeleteDue()).deleted).toBe(1);
    expect(await api.prisma.user.findUnique({ where: { id: erased.id } })).toBeNull();
    // Tied to the erased user by the address alone, and still to be applied: its payload stays.
    expect(await archived(bounce.eventId)).toMatchObject({
      status: 'FAILED',
      payload: { type: 'email.bounced', data: { to: ['left.reapply@example.com'] } },
    });

    expect(await inbox().reapplyDue(bounce.retryAt!)).toBe(1);
    expect(await untilSettled(bounce.eventId)).toMatchObject({ status: 'PROCESSED', error: null });
    expect(await suppression(bob.email)).toMatchObject({ reason: 'bounce', sourceEventId: bounce.eventId });
  });

  it('never re-applies a refused e-mail payload', async () => {
    const malformed = signEmailEvent({
      type: 'email.bounced',
      created_at: new Date().toISOString(),
      data: { to: [] },
    });
    const res = await api.http.post('/webhooks/email').set(malformed.headers).send(malformed.body);
    expect(res.status).toBe(400);
    expect(await archived(malformed.id)).toMatchObject({ status: 'FAILED', retryAt: null });
    expect(await inbox().reapplyDue(new Date(Date.now() + 400 * HOUR))).toBe(0);
    expect(await archived(malformed.id)).toMatchObject({ status: 'FAILED', autoReapplies: 0 });
  });
});
