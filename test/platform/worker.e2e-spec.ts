import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { JobRegistry } from '../../src/infra/queue/job-registry.js';
import { OutboxService } from '../../src/infra/queue/outbox.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { UserHooks } from '../../src/modules/users/user-hooks.js';
import type { User } from '../../src/generated/prisma/client.js';
import { ProbeModule } from '../support/probe.module.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('worker: BullMQ processors, outbox relay, post-signup hooks', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  const welcomed: string[] = [];
  let failNext = false;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi({ modules: [ProbeModule] });
    worker = await env.startWorker();
    worker.get(UserHooks).on('signup', 'test-recorder', async (user: User) => {
      if (failNext) {
        failNext = false;
        throw new Error('hook failed once');
      }
      welcomed.push(user.identityUserId);
    });
  });
  afterAll(() => env.close());

  it('refuses to boot when a job has no handler', () => {
    const registry = new JobRegistry();
    registry.register(JOBS.relayOutbox.queue, [JOBS.relayOutbox.name]);
    expect(registry.missing()).toContain(`${JOBS.postSignup.queue}/${JOBS.postSignup.name}`);
    expect(() => registry.onApplicationBootstrap()).toThrow(/jobs without a handler/);
    expect(worker.get(JobRegistry).missing()).toEqual([]);
  });

  it('runs the post-signup hooks of a just-in-time user once, in the worker', async () => {
    await api.http
      .get('/api/v1/probe/whoami')
      .set('Authorization', await api.bearer('user_hooked', 'hooked@example.com'));
    await waitFor(async () => welcomed.includes('user_hooked'));
    const entry = await api.prisma.outboxEntry.findUniqueOrThrow({
      where: {
        jobId: `post-signup-${(await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_hooked' } })).id}`,
      },
    });
    expect(entry.dispatchedAt).not.toBeNull();
    expect(welcomed.filter((id) => id === 'user_hooked')).toHaveLength(1);
    // The Email module's own signup hook sent the welcome e-mail through the console provider.
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_hooked' } });
    const mail = await waitFor(() =>
      api.prisma.emailMessage.findUnique({ where: { idempotencyKey: `welcome-${user.id}` } }),
    );
    expect(mail).toMatchObject({
      status: 'sent',
      templateKey: 'welcome',
      kind: 'transactional',
      toAddress: 'hooked@example.com',
    });
    expect(await api.prisma.auditLog.count({ where: { action: 'email.sent', userId: 'user_hooked' } })).toBe(
      1,
    );
  });

  it('retries a job whose hook failed', async () => {
    failNext = true;
    await api.http
      .get('/api/v1/probe/whoami')
      .set('Authorization', await api.bearer('user_retry', 'retry@example.com'));
    await waitFor(async () => welcomed.includes('user_retry'), 15_000);
  });

  it('relays outbox entries whose push failed, exactly once per job id', async () => {
    const outbox = worker.get(OutboxService);
    const user = await createUser(api.prisma, { identityUserId: 'user_outbox', email: 'o@example.com' });
    // Written but never dispatched, as if Redis was down at commit time (OutboxService.add inside a unit
    // of work would push it at commit, so the row is inserted directly).
    await api.prisma.outboxEntry.create({
      data: {
        queue: JOBS.postSignup.queue,
        jobName: JOBS.postSignup.name,
        jobId: `post-signup-${user.id}`,
        payload: { userId: user.id },
      },
    });
    await api.prisma.outboxEntry.updateMany({
      where: { jobId: `post-signup-${user.id}` },
      data: { createdAt: new Date(Date.now() - 60_000) },
    });
    const [a, b] = await Promise.all([outbox.relay(), outbox.relay()]);
    expect(a + b).toBeGreaterThanOrEqual(1);
    await waitFor(async () => welcomed.includes('user_outbox'));
    expect(await outbox.relay()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(welcomed.filter((id) => id === 'user_outbox')).toHaveLength(1);
    const queue = worker.get(QueueService).queue(JOBS.postSignup.queue);
    expect(await queue.getJob(`post-signup-${user.id}`)).toBeDefined();
  });
});
