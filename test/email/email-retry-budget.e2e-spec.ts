import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { HttpClient } from '../../src/infra/http/http-client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/**
 * Spec: "e-mail send retries: 3". The budget is per e-mail, across BullMQ's job attempts (5): before
 * issue 13 one failing e-mail made 5 x 4 = 20 provider requests.
 */
describe('e-mail retries: at most 1 + EMAIL_SEND_RETRIES provider requests per e-mail, across job attempts', () => {
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
  });
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  const enqueue = (userId: string, idempotencyKey: string) =>
    api.app
      .get(QueueService)
      .queue('email')
      .add(
        JOBS.sendEmail.name,
        { userId, templateKey: 'welcome', idempotencyKey },
        { jobId: idempotencyKey },
      );

  it('spends the budget once when the provider fails every request', async () => {
    const user = await createMember(api.prisma, 'always-down', { consent: true });
    fake.failAddress(user.email, 503);
    const job = await enqueue(user.id, `budget-down-${user.id}`);
    await waitFor(async () => (await job.getState()) === 'completed', 20_000, 100);
    expect(fake.requests).toHaveLength(4);
    expect(fake.requests.every((r) => r.status === 503)).toBe(true);
    expect(
      await api.prisma.emailMessage.findUnique({ where: { idempotencyKey: `budget-down-${user.id}` } }),
    ).toMatchObject({ status: 'failed' });
  });

  it('keeps counting when a job attempt ends early and BullMQ retries it', async () => {
    const user = await createMember(api.prisma, 'split-attempts', { consent: true });
    // Attempt 1: two 503s, then a 409 "still processing" that ends the attempt (not retried in-process).
    fake.failNext(2, 503);
    fake.failNext(1, 409, {}, 'concurrent_idempotent_requests');
    // Then every request fails: attempt 2 may make only the one request left.
    fake.failAddress(user.email, 503);
    const job = await enqueue(user.id, `budget-split-${user.id}`);
    await waitFor(async () => (await job.getState()) === 'completed', 30_000, 100);
    const done = await api.app.get(QueueService).queue('email').getJob(`budget-split-${user.id}`);
    expect(done!.attemptsMade).toBeGreaterThanOrEqual(1);
    expect(fake.requests.map((r) => r.status)).toEqual([503, 503, 409, 503]);
    expect(
      await api.prisma.emailMessage.findUnique({ where: { idempotencyKey: `budget-split-${user.id}` } }),
    ).toMatchObject({ status: 'failed' });
  });
});
