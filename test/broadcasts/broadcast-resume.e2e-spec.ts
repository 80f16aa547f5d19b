import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { recipientKey } from '../../src/modules/broadcasts/broadcast-keys.js';
import { createAudience } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('broadcast resume: a worker restart or crash mid-run sends nobody twice', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let admin: string;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: {
        EMAIL_PROVIDER: 'resend',
        EMAIL_API_URL: fake.url,
        EMAIL_API_KEY: fake.apiKey,
        EMAIL_MAX_REQUESTS_PER_SECOND: '1000',
      },
    });
    env.onClose(() => fake.close());
    api = await env.startApi();
    admin = await api.bearer('user_admin', 'admin@example.com');
    // The admin's first call creates the user; its welcome e-mail must not count among the test's requests.
    await api.http.get('/api/v1/admin/broadcasts').set('Authorization', admin);
    const worker = await env.startWorker();
    await waitFor(async () => fake.deliveredTo('admin@example.com').length === 1);
    await env.stop(worker);
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  const run = (id: string) => api.prisma.broadcastRun.findUniqueOrThrow({ where: { id } });

  it('hands the run back when its worker stops mid-batch, and a new worker finishes it', async () => {
    const members = await createAudience(api.prisma, 'restart', 1000, { consent: true, tier: 'PRO' });
    // Three batches are answered; the fourth is delivered by the provider but its answer never comes.
    fake.hangAfter(3);
    const first = await env.startWorker();
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience: { tiers: ['PRO'] } });
    expect(res.status).toBe(201);
    await waitFor(async () => fake.hungCount === 1, 15_000);

    await env.stop(first);
    const stopped = await run(res.body.id);
    expect(stopped.status).toBe('running');
    expect(await api.prisma.broadcastRecipient.count({ where: { runId: stopped.id } })).toBe(300);
    expect(stopped.sentCount).toBe(300);
    expect(fake.deliveries).toHaveLength(400);
    const job = await api.app.get(QueueService).queue('broadcasts').getJob(`broadcast-${stopped.id}`);
    expect(await job!.getState()).toBe('waiting');
    expect(job!.attemptsMade).toBe(0);

    fake.stopHanging();
    await env.startWorker();
    const done = await waitFor(async () => {
      const current = await run(stopped.id);
      return current.status === 'done' ? current : null;
    }, 20_000);
    expect(done).toMatchObject({ sentCount: 1000, failedCount: 0, skippedCount: 0, recipientsTotal: 1000 });

    // Each member got exactly one e-mail: the interrupted batch was resent under the same key and the
    // provider answered it from its idempotency record instead of delivering it again.
    expect(fake.deliveries).toHaveLength(1000);
    const perAddress = new Map<string, number>();
    for (const d of fake.deliveries) perAddress.set(d.to, (perAddress.get(d.to) ?? 0) + 1);
    expect([...perAddress.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(perAddress.keys())).toEqual(new Set(members.map((m) => m.email)));
    const batchKeys = fake.requests.map((r) => r.headers['idempotency-key']);
    expect(batchKeys[4]).toBe(batchKeys[3]);
    expect(fake.requests[4].status).toBe(200);
    expect(await api.prisma.broadcastRecipient.count({ where: { runId: done.id } })).toBe(1000);
    expect(
      await api.prisma.auditLog.count({ where: { action: 'broadcast.finished', resourceId: done.id } }),
    ).toBe(1);
  });

  it('resumes a run left `running` by a crashed worker when its job is delivered again', async () => {
    await api.prisma.user.updateMany({ data: { marketingConsentGiven: false } });
    const members = await createAudience(api.prisma, 'crash', 250, { consent: true, tier: 'TEAM' });
    // The state a killed worker leaves: running, the first 120 recipients recorded (and mailed).
    const crashed = await api.prisma.broadcastRun.create({
      data: {
        templateKey: 'newsletter',
        kind: 'marketing',
        audience: { tiers: ['TEAM'] },
        createdBy: 'user:user_admin',
        status: 'running',
        startedAt: new Date(),
        recipientsTotal: 250,
        sentCount: 120,
      },
    });
    const before = members.slice(0, 120);
    await api.prisma.broadcastRecipient.createMany({
      data: before.map((m) => ({ runId: crashed.id, userId: m.id, status: 'sent' as const })),
    });
    await api.prisma.emailMessage.createMany({
      data: before.map((m) => ({
        userId: m.id,
        toAddress: m.email,
        templateKey: 'newsletter',
        kind: 'marketing',
        subject: 'x',
        status: 'sent',
        idempotencyKey: recipientKey(crashed.id, m.id),
        broadcastRunId: crashed.id,
      })),
    });

    await env.startWorker();
    await api.app
      .get(QueueService)
      .add(JOBS.dispatchBroadcast, { runId: crashed.id }, { jobId: `broadcast-${crashed.id}` });
    const done = await waitFor(async () => {
      const current = await run(crashed.id);
      return current.status === 'done' ? current : null;
    }, 20_000);
    expect(done).toMatchObject({ sentCount: 250, failedCount: 0, recipientsTotal: 250 });
    expect(fake.deliveries.map((d) => d.to).sort()).toEqual(
      members
        .slice(120)
        .map((m) => m.email)
        .sort(),
    );
  });
});
