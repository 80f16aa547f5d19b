import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { isOutageReason } from '../../src/infra/queue/job-failure.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { BroadcastDispatcher } from '../../src/modules/broadcasts/broadcast-dispatcher.js';
import { newBatchKey } from '../../src/modules/broadcasts/broadcast-keys.js';
import { BroadcastSweeper } from '../../src/modules/broadcasts/broadcast-sweeper.js';
import { broadcastJobId } from '../../src/modules/broadcasts/broadcasts.service.js';
import { EmailSendBudget } from '../../src/modules/email/send-budget.js';
import { createAudience } from '../factories/audience.factory.js';
import { FakeEmailApi, type FakeRequest } from '../fakes/email-api.js';
import { runFinished, signupDay } from '../support/broadcast-runs.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/**
 * SPEC: "send with 3 retries", "e-mail send retries | 3"; issue 13 item 9: at most 1 + EMAIL_SEND_RETRIES
 * provider requests per e-mail in total, across job attempts. A broadcast batch (its idempotency key) has
 * the same budget as a single e-mail, across job attempts, worker restarts and the sweep's pushes: before,
 * a provider outage made a batch retry without end (4 requests per attempt, 5 attempts, then the sweep
 * pushed the job again for 24 h) and the run stayed `running` with its recipients `pending`.
 */
describe('broadcast retries: at most 1 + EMAIL_SEND_RETRIES provider requests per batch, across attempts', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let admin: string;
  /** Requests one batch (one e-mail) may make in total. */
  let limit: number;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({ env: fake.env() });
    env.onClose(() => fake.close());
    limit = env.config.email.sendRetries + 1;
    api = await env.startApi();
    admin = await api.bearer('user_admin', 'admin@example.com');
    // The admin's first call creates the user; its welcome e-mail must not count among the tests' requests.
    await api.http.get('/api/v1/admin/broadcasts').set('Authorization', admin);
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
    // Two recipients per batch: a run of three makes two batches.
    worker.get(BroadcastDispatcher).pageSize = 2;
    await waitFor(async () => fake.deliveredTo('admin@example.com').length === 1, 10_000);
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  const run = (id: string) => api.prisma.broadcastRun.findUniqueOrThrow({ where: { id } });
  const finished = (id: string) => runFinished(api.prisma, id);
  /** Each test addresses the users who signed up on its own day (signupDay). */
  const day = (n: number) => signupDay(2032, n);
  const keyOf = (request: FakeRequest) => String(request.headers['idempotency-key']);
  /** The statuses the provider answered, per idempotency key, in request order. */
  const perKey = () => {
    const keys = new Map<string, (number | 'hung')[]>();
    for (const r of fake.requests) keys.set(keyOf(r), [...(keys.get(keyOf(r)) ?? []), r.status]);
    return keys;
  };
  const recipients = async (runId: string, users: User[]) => {
    const rows = await api.prisma.broadcastRecipient.findMany({ where: { runId } });
    return users.map((u) => rows.find((r) => r.userId === u.id));
  };
  const finishedEntries = (runId: string) =>
    api.prisma.auditLog.findMany({ where: { action: 'broadcast.finished', resourceId: runId } });

  it('records a batch failed once its budget is spent, lets the next page wait for a later attempt, and ends the run failed', async () => {
    const { createdAt, audience } = day(1);
    const members = await createAudience(api.prisma, 'budget-down', 3, { consent: true, createdAt });
    // The provider answers 500 to everything these members are in.
    for (const m of members) fake.failAddress(m.email, 500);
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience, bypass_consent: false });
    expect(res.status).toBe(201);
    const runId = res.body.id as string;

    const ended = await finished(runId);
    expect(ended).toMatchObject({
      status: 'failed',
      sentCount: 0,
      failedCount: 3,
      skippedCount: 0,
      error: 'every recipient failed',
    });
    // Two batches (2 + 1), each under its own key, each exactly 1 + EMAIL_SEND_RETRIES requests.
    const keys = perKey();
    expect(keys.size).toBe(2);
    for (const statuses of keys.values()) expect(statuses).toEqual(Array.from({ length: limit }, () => 500));
    expect(fake.requests.every((r) => r.path === '/emails/batch')).toBe(true);
    expect(fake.deliveries).toHaveLength(0);

    // Each recipient failed with the reason; its e-mail log row and email.failed entry say the same.
    for (const row of await recipients(runId, members)) {
      expect(row).toMatchObject({ status: 'failed' });
      expect(row!.error).toMatch(/provider answered 500/);
      expect(row!.error).toMatch(new RegExp(`after ${limit} provider requests`));
    }
    const logs = await api.prisma.emailMessage.findMany({ where: { broadcastRunId: runId } });
    expect(logs.map((m) => m.status)).toEqual(['failed', 'failed', 'failed']);
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'email.failed', userId: { in: members.map((m) => m.identityUserId) } },
      }),
    ).toBe(3);
    const entries = await finishedEntries(runId);
    expect(entries.map((a) => a.details)).toEqual([
      expect.objectContaining({ status: 'failed', recipients: 3, sent: 0, failed: 3, skipped: 0 }),
    ]);
    expect(entries[0].details).not.toHaveProperty('pending');

    // The job completed with the run: the sweep finds nothing to push, and nothing is sent again.
    const queue = worker.get(QueueService).queue(JOBS.dispatchBroadcast.queue);
    expect(await queue.getJobState(broadcastJobId(runId))).toBe('completed');
    // The second page was not tried by the attempt whose batch spent its budget on the outage: it waited for
    // the job's next attempt (a short outage must not fail the whole audience, one fresh budget per page).
    expect((await queue.getJob(broadcastJobId(runId)))!.attemptsMade).toBeGreaterThan(1);
    const sweep = await worker.get(BroadcastSweeper).sweep();
    expect([...sweep.requeued, ...sweep.backingOff, ...sweep.failed]).not.toContain(runId);
    expect(fake.requests).toHaveLength(2 * limit);
  });

  it('keeps a run with more failing pages than job attempts resumable: its pages wait out the outage', async () => {
    const { createdAt, audience } = day(5);
    // Three pages of two; the provider answers 500 to every one of them.
    const members = await createAudience(api.prisma, 'budget-pages', 6, { consent: true, createdAt });
    for (const m of members) fake.failAddress(m.email, 500);
    const { id: runId } = await api.prisma.broadcastRun.create({
      data: { templateKey: 'newsletter', kind: 'marketing', audience, createdBy: 'user:user_admin' },
    });
    const jobId = broadcastJobId(runId);
    const queue = worker.get(QueueService).queue(JOBS.dispatchBroadcast.queue);
    // Two attempts: each spends one page's budget on the outage and stops.
    await worker
      .get(QueueService)
      .add(JOBS.dispatchBroadcast, { runId }, { jobId, attempts: 2, backoff: { type: 'fixed', delay: 100 } });
    await waitFor(async () => (await queue.getJobState(jobId)) === 'failed', 20_000);

    // The job failed on an outage: the run is still running, the third page untried, none of it failed.
    const job = await queue.getJob(jobId);
    expect(isOutageReason(job!.failedReason)).toBe(true);
    expect(await run(runId)).toMatchObject({ status: 'running', failedCount: 4, sentCount: 0 });
    expect(await api.prisma.broadcastRecipient.count({ where: { runId } })).toBe(4);
    expect(perKey().size).toBe(2);

    // The sweep pushes it again; the last page gets its own budget, then every recipient has failed.
    expect((await worker.get(BroadcastSweeper).sweep()).requeued).toContain(runId);
    const ended = await finished(runId);
    expect(ended).toMatchObject({
      status: 'failed',
      failedCount: 6,
      sentCount: 0,
      error: 'every recipient failed',
    });
    const keys = perKey();
    expect(keys.size).toBe(3);
    for (const statuses of keys.values()) expect(statuses).toEqual(Array.from({ length: limit }, () => 500));
    expect(await finishedEntries(runId)).toHaveLength(1);
  });

  it('counts a batch’s requests across job attempts: a retried attempt makes only what is left', async () => {
    const { createdAt, audience } = day(2);
    const members = await createAudience(api.prisma, 'budget-attempts', 2, { consent: true, createdAt });
    // Attempt 1: two 500s, then a 409 "still processing" that ends the attempt (not retried in-process).
    fake.failNext(2, 500);
    fake.failNext(1, 409, {}, 'concurrent_idempotent_requests');
    // Then every request fails: the next attempt may make only the one request left.
    for (const m of members) fake.failAddress(m.email, 500);
    const { id: runId } = await api.prisma.broadcastRun.create({
      data: { templateKey: 'newsletter', kind: 'marketing', audience, createdBy: 'user:user_admin' },
    });
    const jobId = broadcastJobId(runId);
    await worker
      .get(QueueService)
      .add(JOBS.dispatchBroadcast, { runId }, { jobId, attempts: 5, backoff: { type: 'fixed', delay: 100 } });

    const ended = await finished(runId);
    expect(ended).toMatchObject({ status: 'failed', sentCount: 0, failedCount: 2 });
    expect([...perKey().values()]).toEqual([[500, 500, 409, 500]]);
    const job = await worker.get(QueueService).queue(JOBS.dispatchBroadcast.queue).getJob(jobId);
    expect(job!.attemptsMade).toBeGreaterThanOrEqual(1);
    expect(await job!.getState()).toBe('completed');
    for (const row of await recipients(runId, members)) expect(row).toMatchObject({ status: 'failed' });
    expect(await finishedEntries(runId)).toHaveLength(1);
  });

  it('delivers once when the provider fails once and recovers within the budget', async () => {
    const { createdAt, audience } = day(3);
    const members = await createAudience(api.prisma, 'budget-recovers', 2, { consent: true, createdAt });
    fake.failNext(1, 500);
    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience, bypass_consent: false });
    expect(res.status).toBe(201);

    const ended = await finished(res.body.id);
    expect(ended).toMatchObject({ status: 'done', sentCount: 2, failedCount: 0, error: null });
    expect([...perKey().values()]).toEqual([[500, 200]]);
    for (const m of members) expect(fake.deliveredTo(m.email)).toHaveLength(1);
    for (const row of await recipients(res.body.id, members)) expect(row).toMatchObject({ status: 'sent' });
    const entries = await finishedEntries(res.body.id);
    expect(entries.map((a) => a.details)).toEqual([
      expect.objectContaining({ status: 'done', sent: 2, failed: 0 }),
    ]);
  });

  it('ends a run the sweep pushes again whose pending batch has no request left, without sending', async () => {
    const { createdAt, audience } = day(4);
    const members = await createAudience(api.prisma, 'budget-spent', 2, { consent: true, createdAt });
    // The state a run is left in when its job is lost after the batch spent its budget (the last answer
    // lost with the worker): `running`, the batch reserved under its key, every request of it counted.
    const { id: runId } = await api.prisma.broadcastRun.create({
      data: {
        templateKey: 'newsletter',
        kind: 'marketing',
        audience,
        createdBy: 'user:user_admin',
        status: 'running',
        startedAt: new Date(),
        recipientsTotal: 2,
      },
    });
    const batchKey = newBatchKey(runId);
    await api.prisma.broadcastRecipient.createMany({
      data: members.map((m) => ({ runId, userId: m.id, status: 'pending' as const, batchKey })),
    });
    const budget = worker.get(EmailSendBudget);
    for (let i = 0; i < limit; i += 1) await budget.count(batchKey);

    expect((await worker.get(BroadcastSweeper).sweep()).requeued).toContain(runId);
    const ended = await finished(runId);
    expect(ended).toMatchObject({ status: 'failed', sentCount: 0, failedCount: 2 });
    expect(fake.requests).toHaveLength(0);
    for (const row of await recipients(runId, members)) {
      expect(row).toMatchObject({ status: 'failed' });
      expect(row!.error).toMatch(new RegExp(`after ${limit} provider requests`));
    }
    expect(await finishedEntries(runId)).toHaveLength(1);
  });
});
