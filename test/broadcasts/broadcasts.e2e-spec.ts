import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { BroadcastDispatcher } from '../../src/modules/broadcasts/broadcast-dispatcher.js';
import { recipientKey } from '../../src/modules/broadcasts/broadcast-keys.js';
import { BroadcastRecorder } from '../../src/modules/broadcasts/broadcast-recorder.js';
import type { BroadcastRun } from '../../src/generated/prisma/client.js';
import { createAudience, createMember } from '../factories/audience.factory.js';
import { expectUnreadableInstant, ISO_FORMS_DATE_CANNOT_READ } from '../support/instants.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { earlyArrivals } from '../support/ceiling.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('admin broadcasts: API, 409 rule, dispatch to a mixed audience, retries, failures', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let admin: string;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: {
        ...fake.env(),
      },
    });
    env.onClose(() => fake.close());
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    admin = await api.bearer('user_admin', 'admin@example.com');
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  /** Every run in this file targets one label's users, so earlier tests' users stay out of it. */
  const onlyNew = async () => {
    // Users from earlier tests lose consent so consent-gated broadcasts reach only the new ones.
    await api.prisma.user.updateMany({ data: { marketingConsentGiven: false } });
  };
  const finished = (id: string) =>
    waitFor(async () => {
      const run = await api.prisma.broadcastRun.findUniqueOrThrow({ where: { id } });
      return run.status === 'done' || run.status === 'failed' ? run : null;
    }, 15_000);
  const create = (body: object) =>
    api.http.post('/api/v1/admin/broadcasts').set('Authorization', admin).send(body);

  it('creates a queued run with the documented shape, audits it, and refuses non-admins', async () => {
    const res = await create({
      template_key: 'newsletter',
      audience: { tiers: ['TEAM'], locales: ['de'] },
      bypass_consent: false,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.any(String),
      status: 'queued',
      template_key: 'newsletter',
      kind: 'marketing',
      audience: { tiers: ['TEAM'], locales: ['de'] },
      bypass_consent: false,
      counts: { recipients: 0, sent: 0, failed: 0, skipped: 0 },
      created_at: expect.any(String),
    });
    const audit = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'broadcast.queued', resourceId: res.body.id },
    });
    expect(audit).toMatchObject({ actor: 'user:user_admin', userId: 'user_admin' });
    expect(audit.details).toMatchObject({
      template: 'newsletter',
      kind: 'marketing',
      bypass_consent: false,
      audience_tiers: ['TEAM'],
    });
    expect(await api.prisma.outboxEntry.count({ where: { jobId: `broadcast-${res.body.id}` } })).toBe(1);
    expect((await finished(res.body.id)).status).toBe('done');

    const user = await api.bearer('user_plain', 'plain@example.com');
    const forbidden = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', user)
      .send({ template_key: 'newsletter', audience: {} });
    expect(forbidden.status).toBe(403);
    expect((await api.http.get('/api/v1/admin/broadcasts')).status).toBe(401);
  });

  it('answers 409 to a marketing template with bypass_consent and allows it for a transactional one', async () => {
    const before = await api.prisma.broadcastRun.count();
    const res = await create({ template_key: 'newsletter', audience: {}, bypass_consent: true });
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
    expect(await api.prisma.broadcastRun.count()).toBe(before);

    const transactional = await create({
      template_key: 'welcome',
      audience: { tiers: ['TEAM'] },
      bypass_consent: true,
    });
    expect(transactional.status).toBe(201);
    expect(transactional.body).toMatchObject({ kind: 'transactional', bypass_consent: true });
    await finished(transactional.body.id);
  });

  it('validates the body and the audience filter', async () => {
    const bad = [
      { template_key: 'nope', audience: {} },
      { template_key: 'newsletter', audience: { tiers: ['GOLD'] } },
      { template_key: 'newsletter', audience: { tiers: [] } },
      { template_key: 'newsletter', audience: { sql: 'DROP TABLE users' } },
      { template_key: 'newsletter', audience: { locales: ["en'; --"] } },
      {
        template_key: 'newsletter',
        audience: { signed_up_after: '2026-02-01T00:00:00Z', signed_up_before: '2026-01-01T00:00:00Z' },
      },
      { template_key: 'newsletter', audience: { signed_up_after: 'yesterday' } },
      { template_key: 'newsletter' },
      { template_key: 'newsletter', audience: {}, bypass_consent: 'yes' },
      { template_key: 'newsletter', audience: {}, extra: 1 },
    ];
    for (const body of bad) {
      const res = await create(body);
      expect([res.status, body]).toEqual([400, body]);
    }
  });

  it('refuses a template that needs data of its own per recipient: a broadcast would send it with blanks', async () => {
    // payment_failed asks every user to update a payment method at {{data.update_url}}; a broadcast has
    // no such link (nor a tier, a balance or a confirmation link): it went out with an empty one.
    const before = await api.prisma.broadcastRun.count();
    for (const template_key of [
      'payment_failed',
      'confirm_subscription',
      'low_balance',
      'subscription_welcome',
    ]) {
      const res = await create({ template_key, audience: {}, bypass_consent: true });
      expect([template_key, res.status, res.body.code]).toEqual([template_key, 400, 'template_needs_data']);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.body.errors[0].field).toBe('template_key');
    }
    expect(await api.prisma.broadcastRun.count()).toBe(before);

    // A run of such a template created before the check ends failed in the dispatcher, sending nothing.
    const legacy = await api.prisma.broadcastRun.create({
      data: {
        templateKey: 'payment_failed',
        kind: 'transactional',
        audience: {},
        bypassConsent: true,
        createdBy: 'user:user_admin',
      },
    });
    expect(await worker.get(BroadcastDispatcher).run(legacy.id)).toMatchObject({ status: 'failed' });
    expect(await api.prisma.broadcastRun.findUniqueOrThrow({ where: { id: legacy.id } })).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('needs per-recipient data'),
    });
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses an audience date in an ISO 8601 form Date cannot read with 400 naming it', async () => {
    for (const at of ISO_FORMS_DATE_CANNOT_READ) {
      const res = await create({
        template_key: 'welcome',
        audience: { signed_up_after: at },
        bypass_consent: false,
      });
      expectUnreadableInstant(res, 'audience.signed_up_after');
    }
  });

  it('lists newest first with paging, shows one run, and answers 404 to unknown ids', async () => {
    const list = await api.http
      .get('/api/v1/admin/broadcasts?page=1&page_size=1')
      .set('Authorization', admin);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ page: 1, page_size: 1, total: expect.any(Number) });
    expect(list.body.items).toHaveLength(1);
    const newest = await api.prisma.broadcastRun.findFirstOrThrow({ orderBy: { createdAt: 'desc' } });
    expect(list.body.items[0].id).toBe(newest.id);
    const one = await api.http.get(`/api/v1/admin/broadcasts/${newest.id}`).set('Authorization', admin);
    expect(one.body).toMatchObject({ id: newest.id, status: newest.status });
    expect(
      (await api.http.get('/api/v1/admin/broadcasts?page_size=101').set('Authorization', admin)).status,
    ).toBe(400);
    expect(
      (
        await api.http
          .get('/api/v1/admin/broadcasts/7b0e4b5e-8a4c-4e9e-9a55-0d2b7f1c2a11')
          .set('Authorization', admin)
      ).status,
    ).toBe(404);
    expect(
      (await api.http.get('/api/v1/admin/broadcasts/not-a-uuid').set('Authorization', admin)).status,
    ).toBe(404);
  });

  it('sends a marketing broadcast once to each consenting member of a mixed audience', async () => {
    await onlyNew();
    const yes = await createAudience(api.prisma, 'mix-yes', 7, { consent: true, tier: 'PRO' });
    const no = await createAudience(api.prisma, 'mix-no', 3, { consent: false, tier: 'PRO' });
    const deleted = await createMember(api.prisma, 'mix-deleted', {
      consent: true,
      tier: 'PRO',
      deleted: true,
    });
    const disposable = await createMember(api.prisma, 'mix-disposable', {
      consent: true,
      tier: 'PRO',
      disposable: true,
    });
    const otherTier = await createMember(api.prisma, 'mix-free', { consent: true, tier: 'FREE' });

    const res = await create({ template_key: 'newsletter', audience: { tiers: ['PRO'] } });
    const run = await finished(res.body.id);
    expect(run).toMatchObject({
      status: 'done',
      sentCount: 7,
      failedCount: 0,
      skippedCount: 4,
      recipientsTotal: 11,
    });

    const delivered = fake.deliveries.map((d) => d.to).sort();
    expect(delivered).toEqual(yes.map((u) => u.email).sort());
    for (const d of fake.deliveries) {
      expect(d.headers['List-Unsubscribe']).toMatch(
        /^<https:\/\/app\.example\.test\/api\/v1\/email\/unsubscribe\?t=/,
      );
      expect(d.headers['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
      expect(d.text).toContain('Unsubscribe: https://app.example.test/api/v1/email/unsubscribe?t=');
    }
    expect(fake.requests.every((r) => r.path === '/emails/batch')).toBe(true);
    for (const u of [...no, deleted, disposable, otherTier])
      expect(fake.deliveredTo(u.email)).toHaveLength(0);

    const recipients = await api.prisma.broadcastRecipient.findMany({ where: { runId: run.id } });
    expect(
      recipients
        .filter((r) => r.status === 'skipped')
        .map((r) => r.error)
        .sort(),
    ).toEqual(['disposable_address', 'no_consent', 'no_consent', 'no_consent']);
    expect(recipients.some((r) => r.userId === deleted.id)).toBe(false);
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'email.sent', details: { path: ['broadcast_id'], equals: run.id } },
      }),
    ).toBe(7);
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'email.skipped', details: { path: ['broadcast_id'], equals: run.id } },
      }),
    ).toBe(4);
    const fin = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'broadcast.finished', resourceId: run.id },
    });
    expect(fin.details).toMatchObject({ status: 'done', sent: 7, skipped: 4, failed: 0 });

    // The e-mail log (email/) has one row per recorded recipient, each with its one audit entry.
    const messages = await api.prisma.emailMessage.findMany({ where: { broadcastRunId: run.id } });
    expect(messages.map((m) => [m.toAddress, m.status, m.reason]).sort()).toEqual(
      [
        ...yes.map((u) => [u.email, 'sent', null]),
        ...no.map((u) => [u.email, 'skipped', 'no_consent']),
        [disposable.email, 'skipped', 'disposable_address'],
      ].sort(),
    );
    for (const m of messages) {
      expect(m).toMatchObject({
        templateKey: 'newsletter',
        kind: 'marketing',
        idempotencyKey: recipientKey(run.id, m.userId!),
      });
      if (m.status === 'sent')
        expect([m.providerMessageId, m.subject]).toEqual([
          expect.any(String),
          expect.stringMatching(/ news$/),
        ]);
    }
    const entries = await api.prisma.auditLog.findMany({
      where: { resourceType: 'email', resourceId: { in: messages.map((m) => m.id) } },
    });
    expect(entries.map((e) => [e.resourceId, e.action, e.actor]).sort()).toEqual(
      messages.map((m) => [m.id, `email.${m.status}`, 'system:broadcast']).sort(),
    );

    const shown = await api.http.get(`/api/v1/admin/broadcasts/${run.id}`).set('Authorization', admin);
    expect(shown.body).toMatchObject({
      status: 'done',
      counts: { recipients: 11, sent: 7, failed: 0, skipped: 4 },
    });

    // A second delivery of the same job (BullMQ redelivery) sends nothing.
    await worker
      .get(QueueService)
      .add(JOBS.dispatchBroadcast, { runId: run.id }, { jobId: `again-${run.id}` });
    await waitFor(async () =>
      (await worker.get(QueueService).queue('broadcasts').getJob(`again-${run.id}`))?.isCompleted(),
    );
    expect(fake.deliveries).toHaveLength(7);
  });

  it("records a page's recipient rows, e-mail log rows and audit entries together or not at all", async () => {
    const user = await createMember(api.prisma, 'atomic', { consent: false });
    const run = await api.prisma.broadcastRun.create({
      data: { templateKey: 'newsletter', kind: 'marketing', createdBy: 'user:user_admin', status: 'running' },
    });
    const skipped = {
      userId: user.id,
      status: 'skipped' as const,
      error: 'no_consent',
      providerMessageId: null,
      email: {
        userId: user.id,
        identityUserId: user.identityUserId,
        toAddress: user.email,
        templateKey: 'newsletter',
        kind: 'marketing',
        subject: '',
        status: 'skipped' as const,
        reason: 'no_consent',
        idempotencyKey: recipientKey(run.id, user.id),
        providerMessageId: null,
        broadcastRunId: run.id,
        html: null,
        text: null,
      },
    };
    const recorded = async () => ({
      recipients: await api.prisma.broadcastRecipient.count({ where: { runId: run.id } }),
      messages: await api.prisma.emailMessage.count({ where: { broadcastRunId: run.id } }),
      audits: await api.prisma.auditLog.count({
        where: { action: 'email.skipped', details: { path: ['broadcast_id'], equals: run.id } },
      }),
      skippedCount: (await api.prisma.broadcastRun.findUniqueOrThrow({ where: { id: run.id } })).skippedCount,
    });
    const recorder = api.app.get(BroadcastRecorder);

    // The last of the three writes (the audit entries) fails: the two before it are rolled back with it.
    await api.prisma.$executeRawUnsafe(
      `CREATE FUNCTION test_refuse_audit() RETURNS trigger LANGUAGE plpgsql
       AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$`,
    );
    await api.prisma.$executeRawUnsafe(
      `CREATE TRIGGER test_refuse_audit BEFORE INSERT ON audit_logs FOR EACH ROW
       WHEN (NEW.details ->> 'broadcast_id' = '${run.id}') EXECUTE FUNCTION test_refuse_audit()`,
    );
    try {
      await expect(recorder.reservePage(run.id, [skipped], [], null)).rejects.toThrow('audit refused');
    } finally {
      await api.prisma.$executeRawUnsafe('DROP TRIGGER test_refuse_audit ON audit_logs');
      await api.prisma.$executeRawUnsafe('DROP FUNCTION test_refuse_audit()');
    }
    expect(await recorded()).toEqual({ recipients: 0, messages: 0, audits: 0, skippedCount: 0 });

    await recorder.reservePage(run.id, [skipped], [], null);
    expect(await recorded()).toEqual({ recipients: 1, messages: 1, audits: 1, skippedCount: 1 });
    // Recorded once: the same outcome again (a concurrent delivery of the page) writes nothing.
    await recorder.reservePage(run.id, [skipped], [], null);
    expect(await recorded()).toEqual({ recipients: 1, messages: 1, audits: 1, skippedCount: 1 });
  });

  it('filters by locale (language matches regional variants) and signup date range', async () => {
    await onlyNew();
    const old = new Date('2025-01-15T00:00:00Z');
    const recent = new Date('2026-06-15T00:00:00Z');
    const de = await createMember(api.prisma, 'loc-de', { consent: true, locale: 'de', createdAt: recent });
    const deAt = await createMember(api.prisma, 'loc-deat', {
      consent: true,
      locale: 'de-AT',
      createdAt: recent,
    });
    await createMember(api.prisma, 'loc-old', { consent: true, locale: 'de', createdAt: old });
    await createMember(api.prisma, 'loc-en', { consent: true, locale: 'en', createdAt: recent });
    await createMember(api.prisma, 'loc-dk', { consent: true, locale: 'dk', createdAt: recent });

    const res = await create({
      template_key: 'newsletter',
      audience: {
        locales: ['DE'],
        signed_up_after: '2026-01-01T00:00:00Z',
        signed_up_before: '2027-01-01T00:00:00Z',
      },
    });
    expect(res.body.audience).toEqual({
      locales: ['de'],
      signed_up_after: '2026-01-01T00:00:00.000Z',
      signed_up_before: '2027-01-01T00:00:00.000Z',
    });
    const run = await finished(res.body.id);
    expect(run.sentCount).toBe(2);
    expect(fake.deliveries.map((d) => d.to).sort()).toEqual([de.email, deAt.email].sort());
    expect(fake.deliveredTo(de.email)[0].subject).toBe('Neues von subscription-service');
  });

  it('reaches a locale written in canonical case by PATCH /me, and one stored before in another case', async () => {
    await onlyNew();
    const patched = await createMember(api.prisma, 'loc-patched', { consent: true, locale: 'en' });
    const res = await api.http
      .patch('/api/v1/me')
      .set('Authorization', await api.bearer(patched.identityUserId, patched.email))
      .send({ locale: 'PT-br' });
    expect(res.body.locale).toBe('pt-BR');
    // Rows written before canonicalization keep their case (not migrated): matching ignores case.
    const legacy = await createMember(api.prisma, 'loc-legacy', { consent: true, locale: 'PT-BR' });
    await createMember(api.prisma, 'loc-pt', { consent: true, locale: 'pt-PT' });

    const run = await create({ template_key: 'newsletter', audience: { locales: ['PT_br'] } });
    expect(run.body.audience).toEqual({ locales: ['pt-br'] });
    expect((await finished(run.body.id)).sentCount).toBe(2);
    expect(fake.deliveries.map((d) => d.to).sort()).toEqual([patched.email, legacy.email].sort());
  });

  it('reaches users who sent an alias (stored as its replacement) and rows stored with the alias before', async () => {
    await onlyNew();
    const patched = await createMember(api.prisma, 'loc-iw', { consent: true, locale: 'en' });
    const res = await api.http
      .patch('/api/v1/me')
      .set('Authorization', await api.bearer(patched.identityUserId, patched.email))
      .send({ locale: 'iw-IL' });
    expect(res.body.locale).toBe('he-IL');
    const legacy = await createMember(api.prisma, 'loc-iw-legacy', { consent: true, locale: 'iw' });
    await createMember(api.prisma, 'loc-yi', { consent: true, locale: 'yi' });

    const run = await create({ template_key: 'newsletter', audience: { locales: ['IW'] } });
    // The stored audience is what the admin wrote; matching adds the replacement.
    expect(run.body.audience).toEqual({ locales: ['iw'] });
    expect((await finished(run.body.id)).sentCount).toBe(2);
    expect(fake.deliveries.map((d) => d.to).sort()).toEqual([patched.email, legacy.email].sort());
  });

  it('reaches rows stored with an alias before when the audience names its replacement', async () => {
    await onlyNew();
    // Stored before aliases were replaced: the deprecated codes, with and without a region.
    const legacy = await Promise.all(
      ['iw', 'iw-IL', 'heb'].map((locale, i) =>
        createMember(api.prisma, `loc-he-legacy-${i}`, { consent: true, locale }),
      ),
    );
    const current = await createMember(api.prisma, 'loc-he', { consent: true, locale: 'he-IL' });
    await createMember(api.prisma, 'loc-he-yi', { consent: true, locale: 'ji' });
    // A replacement of several subtags (sh -> sr-Latn) keeps the alias's rows under the script too.
    const serbian = await createMember(api.prisma, 'loc-sh-legacy', { consent: true, locale: 'sh-RS' });
    await createMember(api.prisma, 'loc-sr-cyrl', { consent: true, locale: 'sr-Cyrl' });

    const run = await create({ template_key: 'newsletter', audience: { locales: ['he', 'sr-Latn'] } });
    expect(run.body.audience).toEqual({ locales: ['he', 'sr-latn'] });
    expect((await finished(run.body.id)).sentCount).toBe(5);
    expect(fake.deliveries.map((d) => d.to).sort()).toEqual(
      [...legacy, current, serbian].map((m) => m.email).sort(),
    );
  });

  it('retries a failing batch with the same idempotency key and isolates a permanently rejected recipient', async () => {
    await onlyNew();
    const members = await createAudience(api.prisma, 'retry', 5, { consent: true, tier: 'TEAM' });
    fake.failNext(2);
    const retried = await finished(
      (await create({ template_key: 'newsletter', audience: { tiers: ['TEAM'] } })).body.id,
    );
    expect(retried).toMatchObject({ status: 'done', sentCount: 5, failedCount: 0 });
    expect(fake.requests.map((r) => r.status)).toEqual([503, 503, 200]);
    expect(new Set(fake.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    for (const m of members) expect(fake.deliveredTo(m.email)).toHaveLength(1);

    fake.reset();
    const bad = members[2];
    fake.rejectAddress(bad.email);
    const isolated = await finished(
      (await create({ template_key: 'newsletter', audience: { tiers: ['TEAM'] } })).body.id,
    );
    expect(isolated).toMatchObject({ status: 'done', sentCount: 4, failedCount: 1 });
    expect(fake.requests.map((r) => `${r.path} ${r.status}`)).toEqual([
      '/emails/batch 422',
      ...members.map((m) => `/emails ${m.id === bad.id ? 422 : 200}`),
    ]);
    const row = await api.prisma.broadcastRecipient.findFirstOrThrow({
      where: { runId: isolated.id, userId: bad.id },
    });
    expect(row).toMatchObject({ status: 'failed', error: expect.stringContaining('422') });
    for (const m of members) expect(fake.deliveredTo(m.email)).toHaveLength(m.id === bad.id ? 0 : 1);
    expect(
      await api.prisma.auditLog.count({ where: { action: 'email.failed', userId: bad.identityUserId } }),
    ).toBe(1);
  });

  it('ends failed when every recipient failed, and when dispatch itself breaks on the last attempt', async () => {
    await onlyNew();
    const members = await createAudience(api.prisma, 'allfail', 2, { consent: true, tier: 'TEAM' });
    for (const m of members) fake.rejectAddress(m.email);
    const run = await finished(
      (await create({ template_key: 'newsletter', audience: { tiers: ['TEAM'] } })).body.id,
    );
    expect(run).toMatchObject({
      status: 'failed',
      failedCount: 2,
      sentCount: 0,
      error: 'every recipient failed',
    });

    // Wrong API key: nothing can be sent; the job's last attempt marks the run failed (nobody is recorded
    // sent or failed; the reserved batch stays pending: the provider never confirmed it).
    fake.reset();
    fake.apiKey = 'rotated-key';
    const queued: BroadcastRun = await api.prisma.broadcastRun.create({
      data: {
        templateKey: 'newsletter',
        kind: 'marketing',
        audience: { tiers: ['TEAM'] },
        createdBy: 'user:user_admin',
      },
    });
    await worker
      .get(QueueService)
      .add(JOBS.dispatchBroadcast, { runId: queued.id }, { jobId: `once-${queued.id}`, attempts: 1 });
    const broken = await finished(queued.id);
    fake.apiKey = 'test-email-api-key';
    const team = await api.prisma.user.count({ where: { currentTier: 'TEAM', deletedAt: null } });
    expect(broken).toMatchObject({ status: 'failed', sentCount: 0, recipientsTotal: team });
    expect(broken.error).toMatch(/401/);
    expect(
      await api.prisma.broadcastRecipient.count({
        where: { runId: queued.id, status: { in: ['sent', 'failed'] } },
      }),
    ).toBe(0);
    expect(
      await api.prisma.broadcastRecipient.count({ where: { runId: queued.id, status: 'pending' } }),
    ).toBe(2);
    const fin = await api.prisma.auditLog.findFirstOrThrow({
      where: { action: 'broadcast.finished', resourceId: queued.id },
    });
    expect(fin.details).toMatchObject({ status: 'failed', sent: 0, failed: 0, pending: 2 });
  });

  it('keeps the batch requests of concurrent runs under the shared ceiling, measured at the provider', async () => {
    // Two workers, 20 requests/s shared through Redis, two runs dispatched at once in batches of 5.
    const config = env.configWith({ EMAIL_MAX_REQUESTS_PER_SECOND: '20' });
    const workers = await Promise.all([env.startWorker({ config }), env.startWorker({ config })]);
    const runs: BroadcastRun[] = [];
    for (const [i, label] of ['ceiling-a', 'ceiling-b'].entries()) {
      const start = Date.UTC(2031, 0, i + 1);
      await createAudience(api.prisma, label, 30, { consent: true, createdAt: new Date(start + 3_600_000) });
      runs.push(
        await api.prisma.broadcastRun.create({
          data: {
            templateKey: 'newsletter',
            kind: 'marketing',
            audience: {
              signed_up_after: new Date(start).toISOString(),
              signed_up_before: new Date(start + 86_400_000).toISOString(),
            },
            createdBy: 'user:user_admin',
          },
        }),
      );
    }
    const start = Date.now();
    const outcomes = await Promise.all(
      workers.map((w, i) => {
        const dispatcher = w.get(BroadcastDispatcher);
        dispatcher.pageSize = 5;
        return dispatcher.run(runs[i].id);
      }),
    );
    await Promise.all(workers.map((w) => env.stop(w)));
    expect(outcomes.map((o) => o.counts?.sent)).toEqual([30, 30]);

    // One slot per request, whatever it carries: 12 batch requests of 5 messages.
    expect(fake.requests).toHaveLength(12);
    for (const r of fake.requests) {
      expect(r.path).toBe('/emails/batch');
      expect(r.body).toHaveLength(5);
    }
    // One ceiling for both workers: the k-th request reaches the provider k slots of 50 ms after the start
    // at the earliest (its Redis-reserved slot), however late a loaded machine delivers any of them.
    expect(
      earlyArrivals(
        fake.requests.map((r) => r.at),
        start,
        20,
      ),
    ).toEqual([]);
  });

  it('reaches users without consent with a transactional notice only when bypass_consent is set', async () => {
    await onlyNew();
    const [withConsent] = await createAudience(api.prisma, 'notice-yes', 1, { consent: true, tier: 'TEAM' });
    const [without] = await createAudience(api.prisma, 'notice-no', 1, { consent: false, tier: 'TEAM' });
    const gated = await finished(
      (await create({ template_key: 'welcome', audience: { tiers: ['TEAM'] } })).body.id,
    );
    expect(gated).toMatchObject({ sentCount: 1 });
    expect(fake.deliveredTo(without.email)).toHaveLength(0);
    // Sent under consent: it can be withdrawn from the message itself.
    expect(fake.deliveredTo(withConsent.email)[0].headers['List-Unsubscribe']).toBeDefined();

    fake.reset();
    const notice = await finished(
      (await create({ template_key: 'welcome', audience: { tiers: ['TEAM'] }, bypass_consent: true })).body
        .id,
    );
    expect(notice.sentCount).toBeGreaterThanOrEqual(2);
    expect(fake.deliveredTo(without.email)).toHaveLength(1);
    expect(fake.deliveredTo(without.email)[0].headers['List-Unsubscribe']).toBeUndefined();
  });
});
