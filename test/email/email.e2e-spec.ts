import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { RedisService } from '../../src/infra/redis/redis.service.js';
import { EmailService } from '../../src/modules/email/email.service.js';
import { EmailProvider } from '../../src/modules/email/providers/email-provider.js';
import { createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { earlyArrivals } from '../support/ceiling.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('e-mail: Resend-shaped provider, consent gate, headers and footer, retries, rate ceiling', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let email: EmailService;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: {
        ...fake.env(),
        EMAIL_FROM: 'Acme <news@acme.test>',
      },
    });
    env.onClose(() => fake.close());
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    email = worker.get(EmailService);
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  it('sends marketing mail only with consent, never to deleted users or disposable addresses', async () => {
    const consenting = await createMember(api.prisma, 'gate-yes', { consent: true });
    const refusing = await createMember(api.prisma, 'gate-no', { consent: false });
    const deleted = await createMember(api.prisma, 'gate-deleted', { consent: true, deleted: true });
    const disposable = await createMember(api.prisma, 'gate-disposable', { consent: true, disposable: true });

    const outcomes = await Promise.all(
      [consenting, refusing, deleted, disposable].map((user) =>
        email.sendTemplate({ userId: user.id, templateKey: 'newsletter', idempotencyKey: `nl-1-${user.id}` }),
      ),
    );
    expect(outcomes.map((o) => [o.status, o.reason])).toEqual([
      ['sent', undefined],
      ['skipped', 'no_consent'],
      ['skipped', 'user_deleted'],
      ['skipped', 'disposable_address'],
    ]);
    expect(fake.deliveries.map((d) => d.to)).toEqual([consenting.email]);

    const audits = await api.prisma.auditLog.findMany({
      where: {
        action: { in: ['email.sent', 'email.skipped'] },
        resourceType: 'email',
        details: { path: ['template'], equals: 'newsletter' },
      },
    });
    expect(audits.filter((a) => a.action === 'email.sent')).toHaveLength(1);
    expect(
      audits
        .filter((a) => a.action === 'email.skipped')
        .map((a) => (a.details as { reason: string }).reason)
        .sort(),
    ).toEqual(['disposable_address', 'no_consent', 'user_deleted']);
    for (const audit of audits)
      expect(Object.keys(audit.details as object).sort()).toEqual(
        expect.arrayContaining(['kind', 'template']),
      );

    // Transactional mail does not need marketing consent; a second job with the same key sends nothing.
    const welcome = await email.sendTemplate({
      userId: refusing.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${refusing.id}`,
    });
    const again = await email.sendTemplate({
      userId: refusing.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${refusing.id}`,
    });
    expect([welcome.status, again.status]).toEqual(['sent', 'duplicate']);
    expect(fake.deliveredTo(refusing.email)).toHaveLength(1);
  });

  it('puts RFC 8058 headers, a footer link and an idempotency key on marketing mail only', async () => {
    const user = await createMember(api.prisma, 'headers', { consent: true });
    await email.sendTemplate({
      userId: user.id,
      templateKey: 'newsletter',
      idempotencyKey: `nl-2-${user.id}`,
    });
    await email.sendTemplate({
      userId: user.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${user.id}`,
    });
    const [marketing, transactional] = fake.deliveries;

    const link =
      /^<(https:\/\/app\.example\.test\/api\/v1\/email\/unsubscribe\?t=[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)>$/.exec(
        marketing.headers['List-Unsubscribe'],
      );
    expect(link).not.toBeNull();
    expect(marketing.headers['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
    expect(marketing.html).toContain(`href="${link![1]}"`);
    expect(marketing.html.indexOf(link![1])).toBeLessThan(marketing.html.indexOf('</body>'));
    expect(marketing.text).toContain(`Unsubscribe: ${link![1]}`);
    expect(marketing.from).toBe('Acme <news@acme.test>');
    expect(fake.requests[0].headers['idempotency-key']).toBe(`nl-2-${user.id}`);
    expect(fake.requests[0].headers.authorization).toBe(`Bearer ${fake.apiKey}`);

    expect(transactional.headers['List-Unsubscribe']).toBeUndefined();
    expect(transactional.text).not.toContain('unsubscribe');

    // The header link works as a one-click unsubscribe.
    const res = await api.http
      .post(link![1].replace('https://app.example.test', ''))
      .type('form')
      .send('List-Unsubscribe=One-Click');
    expect(res.status).toBe(200);
    expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).marketingConsentGiven).toBe(
      false,
    );
  });

  it('renders the user locale, falls back to the language and then to English, and escapes HTML', async () => {
    const austrian = await createMember(api.prisma, 'locale-at', { locale: 'de-AT' });
    const french = await createMember(api.prisma, 'locale-fr', { locale: 'fr' });
    await email.sendTemplate({
      userId: austrian.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${austrian.id}`,
    });
    await email.sendTemplate({
      userId: french.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${french.id}`,
    });
    await email.sendTemplate({
      userId: french.id,
      templateKey: 'subscription_welcome',
      idempotencyKey: `sub-${french.id}`,
      data: { tier: '<b>PRO</b>' },
    });
    expect(fake.deliveredTo(austrian.email)[0].subject).toBe('Willkommen bei subscription-service');
    const [welcome, subscription] = fake.deliveredTo(french.email);
    expect(welcome.subject).toBe('Welcome to subscription-service');
    expect(subscription.html).toContain('&lt;b&gt;PRO&lt;/b&gt;');
    expect(subscription.html).not.toContain('<b>PRO</b>');
    expect(subscription.text).toContain('<b>PRO</b>');
  });

  it('retries 5xx 3 times with the same idempotency key, and records a permanent rejection without retrying', async () => {
    const user = await createMember(api.prisma, 'retry', { consent: true });
    // "e-mail send retries: 3": the first attempt and 3 retries.
    fake.failNext(3);
    const sent = await email.sendTemplate({
      userId: user.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${user.id}`,
    });
    expect(sent.status).toBe('sent');
    expect(fake.requests.map((r) => r.status)).toEqual([503, 503, 503, 200]);
    expect(new Set(fake.requests.map((r) => r.headers['idempotency-key']))).toEqual(
      new Set([`welcome-${user.id}`]),
    );
    expect(fake.deliveredTo(user.email)).toHaveLength(1);

    const rejected = await createMember(api.prisma, 'rejected', { consent: true });
    fake.reset();
    fake.rejectAddress(rejected.email);
    const outcome = await email.sendTemplate({
      userId: rejected.id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${rejected.id}`,
    });
    expect(outcome.status).toBe('failed');
    expect(fake.requests).toHaveLength(1);
    const row = await api.prisma.emailMessage.findUniqueOrThrow({
      where: { idempotencyKey: `welcome-${rejected.id}` },
    });
    expect(row).toMatchObject({ status: 'failed', reason: expect.stringContaining('422') });
    expect(
      await api.prisma.auditLog.count({ where: { action: 'email.failed', userId: rejected.identityUserId } }),
    ).toBe(1);

    // Provider down past the retries: the e-mail's 1 + EMAIL_SEND_RETRIES requests are spent, so it is
    // failed at once; a later job attempt sends nothing more (issue 13 item 9).
    const unlucky = await createMember(api.prisma, 'unlucky', { consent: true });
    fake.reset();
    fake.failNext(8);
    const job = { userId: unlucky.id, templateKey: 'welcome', idempotencyKey: `welcome-${unlucky.id}` };
    expect(await email.sendTemplate(job)).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('503'),
    });
    expect(fake.requests).toHaveLength(4);
    expect(await email.sendTemplate(job, { finalAttempt: true })).toMatchObject({ status: 'failed' });
    expect(fake.requests).toHaveLength(4);
    expect(
      await api.prisma.emailMessage.findUnique({ where: { idempotencyKey: job.idempotencyKey } }),
    ).toMatchObject({ status: 'failed' });
  });

  it('records a message as sent when the provider already took its key for another body', async () => {
    // An earlier attempt went through but its answer was lost; the rendered message has changed since.
    const user = await createMember(api.prisma, 'taken', { consent: true });
    const job = { userId: user.id, templateKey: 'welcome', idempotencyKey: `welcome-${user.id}` };
    await worker.get(EmailProvider).send({ ...email.compose(user, job), subject: 'an earlier rendering' });
    expect(fake.deliveredTo(user.email)).toHaveLength(1);

    expect(await email.sendTemplate(job)).toMatchObject({ status: 'sent' });
    expect(fake.requests.map((r) => r.status)).toEqual([200, 409]);
    expect(fake.deliveredTo(user.email)).toHaveLength(1);
    expect(
      await api.prisma.emailMessage.findUnique({ where: { idempotencyKey: job.idempotencyKey } }),
    ).toMatchObject({ status: 'sent', providerMessageId: null });
  });

  it('keeps every sender under the shared ceiling, measured at the provider', async () => {
    // Two processes with a 5 requests/s ceiling share it through Redis: together they stay at 5/s.
    const config = env.configWith({ EMAIL_MAX_REQUESTS_PER_SECOND: '5' });
    const [a, b] = await Promise.all([env.startApi({ config }), env.startApi({ config })]);
    const users = await Promise.all(
      Array.from({ length: 12 }, (_, i) => createMember(api.prisma, `ceiling-${i}`)),
    );
    const start = Date.now();
    await Promise.all(
      users.map((user, i) =>
        (i % 2 ? a : b).app
          .get(EmailService)
          .sendTemplate({ userId: user.id, templateKey: 'welcome', idempotencyKey: `welcome-${user.id}` }),
      ),
    );
    const times = fake.requests.map((r) => r.at).sort((x, y) => x - y);
    expect(times).toHaveLength(12);
    // No burst and one ceiling for both: the k-th request reaches the provider k slots of 200 ms after the
    // start at the earliest (its Redis-reserved slot), however late a loaded machine delivers any of them.
    expect(earlyArrivals(times, start, 5)).toEqual([]);
    // And not slower than the ceiling (room for scheduling delays).
    const rate = ((times.length - 1) * 1000) / (times[times.length - 1] - times[0]);
    expect(rate).toBeGreaterThan(5 * 0.7);
  });

  it("honours the provider's Retry-After for every sender, not only the one that got the 429", async () => {
    const users = await Promise.all(
      Array.from({ length: 3 }, (_, i) => createMember(api.prisma, `retry-after-${i}`)),
    );
    fake.failNext(1, 429, { 'retry-after': '1' });
    const first = email.sendTemplate({
      userId: users[0].id,
      templateKey: 'welcome',
      idempotencyKey: `welcome-${users[0].id}`,
    });
    // The other process starts once the 429 has pushed the shared next-slot time into the future.
    const redis = api.app.get(RedisService);
    const key = redis.key('email', 'provider-ceiling');
    await waitFor(async () => Number(await redis.client.get(key)) > Date.now() + 500);
    const other = api.app.get(EmailService);
    await Promise.all([
      first,
      ...users
        .slice(1)
        .map((u) =>
          other.sendTemplate({ userId: u.id, templateKey: 'welcome', idempotencyKey: `welcome-${u.id}` }),
        ),
    ]);
    const limited = fake.requests.find((r) => r.status === 429)!;
    const later = fake.requests.filter((r) => r.status === 200);
    expect(later).toHaveLength(3);
    for (const request of later) expect(request.at - limited.at).toBeGreaterThanOrEqual(900);
  });
});
