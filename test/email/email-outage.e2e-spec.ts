import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { UnitOfWork } from '../../src/infra/prisma/unit-of-work.js';
import { OUTAGE_MARK, OUTAGE_RETRY_WINDOW_MS } from '../../src/infra/queue/job-failure.js';
import { OutboxService } from '../../src/infra/queue/outbox.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS, type JobDef } from '../../src/infra/queue/queues.js';
import type { User } from '../../src/generated/prisma/client.js';
import { createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { deliver, subscribe, subscriptionEvent } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

const UPDATE_URL = 'https://buyer.paddle.com/subscriptions/sub_x/update-payment-method?token=pga_outage';

/**
 * The e-mail provider (the Resend fake) answers 503 to every request of a job's run: the job must fail on
 * an outage, the outbox relay push it again, and the re-run send it once under the same idempotency key
 * (docs/decisions/faults.md, "Outage longer than a job's attempts"). A refusal (4xx) stays `failed`.
 */
describe('e-mail jobs through a provider outage: sent later, once', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({ env: fake.env() });
    env.onClose(() => fake.close());
    api = await env.startApi();
    worker = await env.startWorker();
    worker.get(HttpClient).backoffBaseMs = 5;
  }, 60_000);
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  /** Writes the job to the outbox in a unit of work, as every caller does; it is pushed after commit. */
  const enqueue = (job: JobDef, data: object, jobId: string) =>
    api.app.get(UnitOfWork).run((tx) => api.app.get(OutboxService).add(tx, job, data, jobId));
  const queueOf = (job: JobDef) => worker.get(QueueService).queue(job.queue);
  /** The relay's pass once the backoff since each open entry's last push has passed (time travel). */
  const relay = async () => {
    await api.prisma.outboxEntry.updateMany({
      where: { completedAt: null, dispatchedAt: { not: null } },
      data: { dispatchedAt: new Date(Date.now() - 3_600_000) },
    });
    return worker.get(OutboxService).relay(500, 0);
  };
  const stateOf = (job: JobDef, jobId: string) => queueOf(job).getJobState(jobId);
  const settled = (job: JobDef, jobId: string, state: 'failed' | 'completed') =>
    waitFor(async () => (await stateOf(job, jobId)) === state, 20_000, 50);
  const message = (idempotencyKey: string) =>
    api.prisma.emailMessage.findUniqueOrThrow({ where: { idempotencyKey } });
  const audits = (user: User, action: string) =>
    api.prisma.auditLog.count({ where: { action, userId: user.identityUserId } });
  const statusesTo = (user: User) =>
    fake.requests.filter((r) => (r.body as { to?: string[] }).to?.[0] === user.email).map((r) => r.status);

  /** The job failed for good on an outage after one attempt: the run ended, BullMQ's others unused. */
  async function failedOnOutage(job: JobDef, jobId: string): Promise<void> {
    await settled(job, jobId, 'failed');
    const failed = await queueOf(job).getJob(jobId);
    expect(failed!.failedReason).toMatch(new RegExp(`^${OUTAGE_MARK}`));
    expect(failed!.attemptsMade).toBe(1);
  }

  it('send-email: fails the job on the outage, records the e-mail failed meanwhile, sends it once when the relay pushes it again', async () => {
    const user = await createMember(api.prisma, 'outage-send');
    const key = `outage-send-${user.id}`;
    fake.failAddress(user.email, 503);
    await enqueue(JOBS.sendEmail, { userId: user.id, templateKey: 'welcome', idempotencyKey: key }, key);

    await failedOnOutage(JOBS.sendEmail, key);
    // One run: the first request and EMAIL_SEND_RETRIES (3) retries, none from BullMQ's other attempts.
    expect(statusesTo(user)).toEqual([503, 503, 503, 503]);
    // An operator sees it while the provider is down.
    expect(await message(key)).toMatchObject({ status: 'failed', reason: expect.stringContaining('503') });
    expect(await audits(user, 'email.failed')).toBe(1);

    // Still down at the relay's next pass: a new run with a fresh budget; the failure is not recorded twice.
    await relay();
    await waitFor(async () => statusesTo(user).length === 8, 20_000, 50);
    await failedOnOutage(JOBS.sendEmail, key);
    expect(statusesTo(user)).toEqual(Array(8).fill(503));
    expect(await audits(user, 'email.failed')).toBe(1);
    const open = await api.prisma.outboxEntry.findUniqueOrThrow({ where: { jobId: key } });
    expect(open.completedAt).toBeNull();
    // A pass within the backoff after that second push (10 s) leaves the job alone.
    expect(await worker.get(OutboxService).relay(500, 0)).toBe(0);
    expect(await stateOf(JOBS.sendEmail, key)).toBe('failed');
    expect(statusesTo(user)).toHaveLength(8);

    // The provider is back: the next push sends it, once, under the e-mail's key.
    fake.restoreAddress(user.email);
    await relay();
    await settled(JOBS.sendEmail, key, 'completed');
    const sent = await message(key);
    expect(sent).toMatchObject({ status: 'sent', reason: null });
    expect(fake.deliveredTo(user.email)).toHaveLength(1);
    expect(fake.deliveredTo(user.email)[0]).toMatchObject({
      idempotencyKey: key,
      id: sent.providerMessageId,
    });
    expect(await audits(user, 'email.sent')).toBe(1);

    // The next passes close the row and push nothing more.
    await relay();
    const closed = await api.prisma.outboxEntry.findUniqueOrThrow({ where: { jobId: key } });
    expect(closed.completedAt).not.toBeNull();
    await relay();
    expect(await stateOf(JOBS.sendEmail, key)).toBe('completed');
    expect(fake.deliveredTo(user.email)).toHaveLength(1);
    expect(await api.prisma.emailMessage.count({ where: { userId: user.id } })).toBe(1);
  });

  it('send-email: a refusal (422) stays failed for good: the job completes and is not pushed again', async () => {
    const user = await createMember(api.prisma, 'outage-refused');
    const key = `outage-refused-${user.id}`;
    fake.rejectAddress(user.email, 422);
    await enqueue(JOBS.sendEmail, { userId: user.id, templateKey: 'welcome', idempotencyKey: key }, key);

    await settled(JOBS.sendEmail, key, 'completed');
    expect(statusesTo(user)).toEqual([422]);
    expect(await message(key)).toMatchObject({ status: 'failed', reason: expect.stringContaining('422') });

    await relay();
    const closed = await api.prisma.outboxEntry.findUniqueOrThrow({ where: { jobId: key } });
    expect(closed.completedAt).not.toBeNull();
    await relay();
    expect(await stateOf(JOBS.sendEmail, key)).toBe('completed');
    expect(statusesTo(user)).toEqual([422]);
    expect(await audits(user, 'email.failed')).toBe(1);
  });

  it('send-email: past the 24 h window the relay gives the job up and the e-mail stays recorded failed', async () => {
    const user = await createMember(api.prisma, 'outage-window');
    const key = `outage-window-${user.id}`;
    fake.failAddress(user.email, 503);
    await enqueue(JOBS.sendEmail, { userId: user.id, templateKey: 'welcome', idempotencyKey: key }, key);
    await failedOnOutage(JOBS.sendEmail, key);

    // Queued longer ago than the window (Resend's idempotency window for the key).
    await api.prisma.outboxEntry.update({
      where: { jobId: key },
      data: { createdAt: new Date(Date.now() - OUTAGE_RETRY_WINDOW_MS - 60_000) },
    });
    const abandoned = async () =>
      (await worker.get(MetricsService).outboxOutageRetries.get()).values.find(
        (v) => v.labels.job_name === JOBS.sendEmail.name && v.labels.outcome === 'abandoned',
      )?.value ?? 0;
    const before = await abandoned();
    await relay();

    expect(await abandoned()).toBe(before + 1);
    const closed = await api.prisma.outboxEntry.findUniqueOrThrow({ where: { jobId: key } });
    expect(closed.completedAt).not.toBeNull();
    expect(await stateOf(JOBS.sendEmail, key)).toBe('failed');
    expect(statusesTo(user)).toEqual([503, 503, 503, 503]);
    expect(await message(key)).toMatchObject({ status: 'failed' });
    expect(await audits(user, 'email.failed')).toBe(1);
  });

  it('post-signup: the welcome e-mail of a hook fails the job on the outage and goes out once on the push', async () => {
    const user = await createMember(api.prisma, 'outage-welcome');
    const jobId = `post-signup-${user.id}`;
    fake.failAddress(user.email, 503);
    await enqueue(JOBS.postSignup, { userId: user.id }, jobId);

    await failedOnOutage(JOBS.postSignup, jobId);
    expect(statusesTo(user)).toEqual([503, 503, 503, 503]);
    expect(await message(`welcome-${user.id}`)).toMatchObject({ status: 'failed' });

    fake.restoreAddress(user.email);
    await relay();
    await settled(JOBS.postSignup, jobId, 'completed');
    expect(await message(`welcome-${user.id}`)).toMatchObject({ status: 'sent' });
    expect(fake.deliveredTo(user.email)).toHaveLength(1);
    expect(fake.deliveredTo(user.email)[0].idempotencyKey).toBe(`welcome-${user.id}`);
  });

  it('dunning: payment_failed fails its job on the outage and is sent once, with its link, on the push', async () => {
    const { user, subId, at } = await subscribe(api);
    // The subscription's welcome goes out before the provider goes down.
    await waitFor(async () => fake.deliveredTo(user.email).length === 1, 20_000, 50);
    fake.reset();
    fake.failAddress(user.email, 503);
    const pastDue = subscriptionEvent({
      type: 'subscription.past_due',
      subId,
      status: 'past_due',
      occurredAt: new Date(at.getTime() + 1000),
      periodStart: new Date(at.getTime() + 1000),
    }) as ReturnType<typeof subscriptionEvent> & { data: Record<string, unknown> };
    pastDue.data.management_urls = { update_payment_method: UPDATE_URL, cancel: null };
    expect((await deliver(api, pastDue)).status).toBe(200);
    const sub = await api.prisma.subscription.findUniqueOrThrow({ where: { providerSubscriptionId: subId } });
    const entry = await waitFor(
      () =>
        api.prisma.outboxEntry.findFirst({
          where: {
            jobName: JOBS.dunningEmail.name,
            jobId: { startsWith: `dunning-payment-failed-${sub.id}-` },
          },
        }),
      20_000,
      50,
    );
    const key = entry.jobId;

    await failedOnOutage(JOBS.dunningEmail, key);
    expect(statusesTo(user)).toEqual([503, 503, 503, 503]);
    expect(await message(key)).toMatchObject({ status: 'failed', templateKey: 'payment_failed' });

    fake.restoreAddress(user.email);
    await relay();
    await settled(JOBS.dunningEmail, key, 'completed');
    expect(await message(key)).toMatchObject({ status: 'sent', templateKey: 'payment_failed' });
    const delivered = fake.deliveredTo(user.email);
    expect(delivered).toHaveLength(1);
    expect(delivered[0].idempotencyKey).toBe(key);
    expect(delivered[0].text).toContain(UPDATE_URL);
    await relay();
    const closed = await api.prisma.outboxEntry.findUniqueOrThrow({ where: { jobId: key } });
    expect(closed.completedAt).not.toBeNull();
    expect(fake.deliveredTo(user.email)).toHaveLength(1);
  });
});
