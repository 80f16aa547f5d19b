import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import type { User } from '../../src/generated/prisma/client.js';
import { createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { deliverEmailEvent, resendEvent, signEmailEvent } from '../support/email-webhook.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('e-mail deliverability: Resend webhooks, the suppression list, complaints', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let email: EmailService;
  let admin: string;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({ env: fake.env() });
    env.onClose(() => fake.close());
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    email = worker.get(EmailService);
    admin = await api.bearer('user_admin', 'admin@example.com');
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  /** A welcome e-mail really sent to the user through the fake provider; its provider message id. */
  async function sent(user: User, key = `welcome-${user.id}`): Promise<string> {
    const outcome = await email.sendTemplate({
      userId: user.id,
      templateKey: 'welcome',
      idempotencyKey: key,
    });
    expect(outcome.status).toBe('sent');
    return outcome.message!.providerMessageId!;
  }

  const message = (providerMessageId: string) =>
    api.prisma.emailMessage.findFirstOrThrow({ where: { providerMessageId } });
  const suppression = (address: string) =>
    api.prisma.emailSuppression.findUnique({ where: { email: address.toLowerCase() } });
  const archived = async (eventId: string) =>
    (
      await api.prisma.webhookEvent.findUniqueOrThrow({
        where: { provider_eventId: { provider: 'email', eventId } },
      })
    ).payload;

  async function broadcastTo(user: User): Promise<{ status: string; error: string | null }> {
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience: { locales: [user.locale] }, bypass_consent: false });
    expect(res.status).toBe(201);
    const runId = (res.body as { id: string }).id;
    await waitFor(async () => {
      const run = await api.prisma.broadcastRun.findUniqueOrThrow({ where: { id: runId } });
      return run.status === 'done' || run.status === 'failed' ? run : null;
    }, 15_000);
    return api.prisma.broadcastRecipient.findFirstOrThrow({
      where: { runId, userId: user.id },
      select: { status: true, error: true },
    });
  }

  it('a signed permanent bounce suppresses the address: the next transactional and broadcast sends skip it', async () => {
    const user = await createMember(api.prisma, 'bounce', { consent: true, locale: 'fr' });
    const providerId = await sent(user);

    const delivery = signEmailEvent(
      resendEvent('email-bounced', { providerMessageId: providerId, to: user.email }),
    );
    const res = await deliverEmailEvent(api, delivery);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true, event_id: delivery.id, status: 'accepted' });
    expect(res.outcome).toBe('processed');
    const entry = await suppression(user.email);
    expect(entry).toMatchObject({ reason: 'bounce', sourceEventId: delivery.id });
    expect((await message(providerId)).deliveryStatus).toBe('bounced');
    // The worker applied it from the archive, which holds the raw payload (SPEC), subject and tags included.
    expect(await archived(delivery.id)).toEqual(JSON.parse(delivery.body));
    // Audited under the entry's id, linked to the user; the address is in no field of the entry.
    const suppressed = await api.prisma.auditLog.findMany({
      where: { action: 'email.suppressed', resourceId: entry!.id },
    });
    expect(suppressed).toEqual([
      expect.objectContaining({
        actor: 'webhook:email',
        userId: user.identityUserId,
        resourceType: 'email_suppression',
        details: { reason: 'bounce', event_id: delivery.id, provider: 'email' },
      }),
    ]);
    expect(JSON.stringify(suppressed).toLowerCase()).not.toContain(user.email.toLowerCase());

    // Transactional: skipped, recorded and audited with reason suppressed; nothing reaches the provider.
    fake.reset();
    const again = await email.sendTemplate({
      userId: user.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-again-${user.id}`,
    });
    expect(again).toMatchObject({ status: 'skipped', reason: 'suppressed' });
    const skipped = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'email.skipped', userId: user.identityUserId },
    });
    expect(skipped.details).toMatchObject({ reason: 'suppressed', template: 'welcome' });

    // A broadcast (marketing, the user consented) skips the suppressed recipient too.
    expect(await broadcastTo(user)).toEqual({ status: 'skipped', error: 'suppressed' });
    expect(fake.deliveredTo(user.email)).toHaveLength(0);

    // The operator sees it, filters by reason, and takes it off the list (204, audited); mail flows again.
    const list = await api.http
      .get('/api/v1/admin/email/suppressions?reason=bounce&page=1&page_size=10')
      .set('Authorization', admin);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 1, page: 1, page_size: 10 });
    expect(list.body.items).toEqual([
      { id: entry!.id, email: user.email.toLowerCase(), reason: 'bounce', created_at: expect.any(String) },
    ]);
    const complaints = await api.http
      .get('/api/v1/admin/email/suppressions?reason=complaint')
      .set('Authorization', admin);
    expect(complaints.body.items).not.toContainEqual(
      expect.objectContaining({ email: user.email.toLowerCase() }),
    );
    expect(
      (await api.http.get('/api/v1/admin/email/suppressions?reason=nope').set('Authorization', admin)).status,
    ).toBe(400);

    const removed = await api.http
      .delete(`/api/v1/admin/email/suppressions/${encodeURIComponent(user.email.toUpperCase())}`)
      .set('Authorization', admin);
    expect(removed.status).toBe(204);
    expect(await suppression(user.email)).toBeNull();
    const audit = await api.prisma.auditLog.findFirstOrThrow({ where: { action: 'email.unsuppressed' } });
    expect(audit).toMatchObject({
      actor: 'user:user_admin',
      userId: user.identityUserId,
      resourceType: 'email_suppression',
      resourceId: entry!.id,
      details: { reason: 'bounce', source: 'admin' },
    });
    expect(JSON.stringify(audit).toLowerCase()).not.toContain(user.email.toLowerCase());
    const gone = await api.http
      .delete(`/api/v1/admin/email/suppressions/${encodeURIComponent(user.email)}`)
      .set('Authorization', admin);
    expect(gone.status).toBe(404);
    await sent(user, `welcome-third-${user.id}`);
  });

  it('a transient bounce is recorded on the message only', async () => {
    const user = await createMember(api.prisma, 'soft', { consent: true });
    const providerId = await sent(user);
    const res = await deliverEmailEvent(
      api,
      signEmailEvent(
        resendEvent(
          'email-bounced',
          { providerMessageId: providerId, to: user.email },
          { bounceType: 'Transient' },
        ),
      ),
    );
    expect(res.outcome).toBe('processed');
    expect(await suppression(user.email)).toBeNull();
    expect((await message(providerId)).deliveryStatus).toBe('soft_bounced');
  });

  it('a complaint suppresses and withdraws consent once, under concurrent redelivery and a second report', async () => {
    const user = await createMember(api.prisma, 'complaint', { consent: true });
    const providerId = await sent(user);
    const event = resendEvent('email-complained', { providerMessageId: providerId, to: user.email });
    const delivery = signEmailEvent(event);

    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        api.http.post('/webhooks/email').set(delivery.headers).send(delivery.body),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.filter((a) => (a.body as { status: string }).status === 'accepted')).toHaveLength(1);
    // The provider reports the same complaint again under a new message id: archived, nothing more done.
    const second = await deliverEmailEvent(api, signEmailEvent(event));
    expect(second.outcome).toBe('skipped');
    await waitFor(async () => {
      const row = await api.prisma.webhookEvent.findUnique({
        where: { provider_eventId: { provider: 'email', eventId: delivery.id } },
      });
      return row?.status === 'PROCESSED' ? row : null;
    });

    const after = await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } });
    expect(after).toMatchObject({ marketingConsentGiven: false, marketingConsentSource: 'complaint' });
    const history = await api.prisma.emailConsentEvent.findMany({ where: { userId: user.id } });
    expect(history).toEqual([expect.objectContaining({ given: false, source: 'complaint' })]);
    const audits = await api.prisma.auditLog.findMany({
      where: { action: 'email.complaint', userId: user.identityUserId },
    });
    expect(audits).toHaveLength(1);
    expect(audits[0].details).toMatchObject({ event_id: delivery.id, consent_given: false });
    const entry = await suppression(user.email);
    expect(entry).toMatchObject({ reason: 'complaint' });
    expect((await message(providerId)).deliveryStatus).toBe('complained');
    expect(await archived(delivery.id)).toEqual(JSON.parse(delivery.body));
    const suppressed = await api.prisma.auditLog.findMany({
      where: { action: 'email.suppressed', resourceId: entry!.id },
    });
    expect(suppressed).toEqual([
      expect.objectContaining({
        userId: user.identityUserId,
        resourceType: 'email_suppression',
        details: { reason: 'complaint', event_id: delivery.id, provider: 'email' },
      }),
    ]);
    expect(JSON.stringify(suppressed).toLowerCase()).not.toContain(user.email.toLowerCase());
  });

  it('a bad, expired or missing signature is 401 and changes nothing; a signed malformed event is 400 and archived FAILED', async () => {
    const user = await createMember(api.prisma, 'forged', { consent: true });
    const providerId = await sent(user);
    const event = resendEvent('email-complained', { providerMessageId: providerId, to: user.email });
    const forged = signEmailEvent(event, {
      secret: `whsec_${Buffer.from('not-the-email-secret-24b').toString('base64')}`,
    });
    const expired = signEmailEvent(event, { timestamp: new Date(Date.now() - 10 * 60_000) });
    const unsigned = { ...signEmailEvent(event).headers, 'svix-signature': '' };
    for (const headers of [forged.headers, expired.headers, unsigned]) {
      const res = await api.http.post('/webhooks/email').set(headers).send(JSON.stringify(event));
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ code: 'invalid_signature', status: 401 });
    }
    expect(await api.prisma.webhookEvent.count({ where: { eventId: { in: [forged.id, expired.id] } } })).toBe(
      0,
    );
    expect(await suppression(user.email)).toBeNull();
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).marketingConsentGiven).toBe(
      true,
    );

    const malformed = signEmailEvent({
      type: 'email.bounced',
      created_at: '2024-11-22T23:41:12.126Z',
      data: { to: [] },
    });
    const res = await api.http.post('/webhooks/email').set(malformed.headers).send(malformed.body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_payload' });
    const archived = await api.prisma.webhookEvent.findUniqueOrThrow({
      where: { provider_eventId: { provider: 'email', eventId: malformed.id } },
    });
    expect(archived.status).toBe('FAILED');
    const failed = await api.prisma.auditLog.findFirst({
      where: { action: 'webhook.failed', resourceId: malformed.id },
    });
    expect(failed?.details).toMatchObject({ provider: 'email' });
  });

  it('delivered and delivery_delayed update the delivery status; a late weaker status never hides a bounce', async () => {
    const user = await createMember(api.prisma, 'delivered', { consent: true });
    const providerId = await sent(user);
    const target = { providerMessageId: providerId, to: user.email };
    expect(
      (await deliverEmailEvent(api, signEmailEvent(resendEvent('email-delivery-delayed', target)))).outcome,
    ).toBe('processed');
    expect((await message(providerId)).deliveryStatus).toBe('delivery_delayed');
    expect(
      (await deliverEmailEvent(api, signEmailEvent(resendEvent('email-delivered', target)))).outcome,
    ).toBe('processed');
    const delivered = await message(providerId);
    expect(delivered.deliveryStatus).toBe('delivered');
    expect(delivered.deliveryUpdatedAt).not.toBeNull();
    // A delayed report arriving after the delivery changes nothing.
    expect(
      (await deliverEmailEvent(api, signEmailEvent(resendEvent('email-delivery-delayed', target)))).outcome,
    ).toBe('skipped');
    expect((await message(providerId)).deliveryStatus).toBe('delivered');
    // An event about a message we never sent is archived and skipped.
    const unknown = await deliverEmailEvent(
      api,
      signEmailEvent(resendEvent('email-delivered', { providerMessageId: 'not-ours', to: user.email })),
    );
    expect(unknown.outcome).toBe('skipped');
  });

  it('counts bounces, complaints and suppressions per day in the admin mailing section and in Prometheus', async () => {
    const res = await api.http.get('/api/v1/admin/metrics/overview').set('Authorization', admin);
    expect(res.status).toBe(200);
    const days = res.body.mailing.deliverability_by_day as {
      date: string;
      bounces: number;
      complaints: number;
      suppressions: number;
    }[];
    expect(days.length).toBeGreaterThanOrEqual(30);
    const today = days.find((d) => d.date === new Date().toISOString().slice(0, 10));
    const suppressed = await api.prisma.emailSuppression.count();
    // This file's earlier tests: two bounces (one permanent), one complaint applied (the repeat is skipped).
    expect(today).toEqual({ date: expect.any(String), bounces: 2, complaints: 1, suppressions: 2 });
    expect(res.body.mailing.suppressed_addresses).toBe(suppressed);

    const text = await worker.get(MetricsService).registry.metrics();
    expect(text).toMatch(/email_suppressions_total\{[^}]*reason="bounce"[^}]*\} 1/);
    expect(text).toMatch(/email_suppressions_total\{[^}]*reason="complaint"[^}]*\} 1/);
    expect(text).toMatch(/email_delivery_events_total\{[^}]*event="bounced_transient"[^}]*\} 1/);
  });

  it('a bounce naming a recipient that is not an address suppresses only the real one', async () => {
    const user = await createMember(api.prisma, 'bounce-odd-recipient');
    const providerId = await sent(user);
    const event = resendEvent('email-bounced', { providerMessageId: providerId, to: user.email });
    event.data.to = ['notemail', user.email];
    const res = await deliverEmailEvent(api, signEmailEvent(event));
    expect(res.outcome).toBe('processed');
    expect(await suppression(user.email)).toMatchObject({ reason: 'bounce' });
    // Nothing an operator could not remove again (DELETE refuses a non-address).
    expect(await suppression('notemail')).toBeNull();
  });

  it("DELETE of a suppression follows the list's own rule: 400 for a value no entry can have, else 404 when it is not on it", async () => {
    const remove = (encoded: string) =>
      api.http.delete(`/api/v1/admin/email/suppressions/${encoded}`).set('Authorization', admin);
    // What the webhook would not store (trimmed and lower-cased: empty, over 320 characters, no @, a NUL).
    for (const encoded of ['x', '%20%20', `${'a'.repeat(320)}%40b`, 'a%00%40b.example']) {
      const res = await remove(encoded);
      expect({ encoded, status: res.status, code: res.body.code }).toEqual({
        encoded,
        status: 400,
        code: 'validation_failed',
      });
      expect(res.body.detail).toContain('1 to 320 characters with an @ and no NUL');
    }
    // Anything else is looked up, however odd: an entry could have it, and this one is not on the list.
    for (const encoded of ['%40', '%0d%0a%40x.y', 'nobody%40example.com']) {
      const res = await remove(encoded);
      expect({ encoded, status: res.status, code: res.body.code }).toEqual({
        encoded,
        status: 404,
        code: 'not_found',
      });
    }
    // Compared as the list stores it: blanks around the address and its case do not matter, even when the
    // blanks alone make the value longer than an entry can be.
    await api.prisma.emailSuppression.create({ data: { email: 'padded@example.com', reason: 'manual' } });
    const padded = await remove(`${'%20'.repeat(320)}PADDED%40example.com%20`);
    expect(padded.status).toBe(204);
    expect(await suppression('padded@example.com')).toBeNull();
  });
});
