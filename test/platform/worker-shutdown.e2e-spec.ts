import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { User } from '../../src/generated/prisma/client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { startWorkerProcess } from '../faults/fault-helpers.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/**
 * SIGTERM to the compiled worker while a job is in flight: the job finishes (once), then the process
 * exits 0. SHUTDOWN_TIMEOUT_MS bounds how long it waits.
 */
describe('worker graceful shutdown', () => {
  let env: TestEnv;
  let api: ApiApp;
  let mail: FakeEmailApi;
  let queues: QueueService;

  beforeAll(async () => {
    mail = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: {
        ...mail.env(),
      },
    });
    env.onClose(() => mail.close());
    api = await env.startApi();
    queues = api.app.get(QueueService);
  });
  afterAll(() => env.close());

  const sendWelcome = async (user: User, key: string) => {
    await queues.add(
      JOBS.sendEmail,
      { userId: user.id, templateKey: 'welcome', idempotencyKey: key },
      { jobId: key },
    );
    // The provider has the request; its answer is withheld: the job is mid-flight.
    await waitFor(async () => mail.heldCount === 1, 15_000, 25);
    expect(await queues.queue('email').getJobState(key)).toBe('active');
  };

  it('finishes the job in flight, records it once, and exits 0', async () => {
    const user = await createMember(api.prisma, 'drain');
    const worker = await startWorkerProcess(env, { SHUTDOWN_TIMEOUT_MS: '20000' });
    mail.holdAnswers();
    await sendWelcome(user, 'shutdown-drain');

    worker.child.kill('SIGTERM');
    await waitFor(async () => worker.stderr().includes('SIGTERM received'), 10_000, 25);
    // Still running: it waits for the job instead of dropping it.
    expect(worker.child.exitCode).toBeNull();
    mail.releaseHeld();
    expect(await worker.exited).toBe(0);

    expect(await queues.queue('email').getJobState('shutdown-drain')).toBe('completed');
    const job = await queues.queue('email').getJob('shutdown-drain');
    expect(job!.stalledCounter).toBe(0);
    expect(job!.attemptsMade).toBe(1);
    expect(mail.deliveredTo(user.email)).toHaveLength(1);
    const rows = await api.prisma.emailMessage.findMany({ where: { idempotencyKey: 'shutdown-drain' } });
    expect(rows).toEqual([expect.objectContaining({ status: 'sent', userId: user.id })]);
    expect(await api.prisma.auditLog.count({ where: { action: 'email.sent', resourceId: rows[0].id } })).toBe(
      1,
    );
  });

  it('gives up after SHUTDOWN_TIMEOUT_MS and exits 1', async () => {
    const user = await createMember(api.prisma, 'stuck');
    const worker = await startWorkerProcess(env, { SHUTDOWN_TIMEOUT_MS: '1000' });
    mail.holdAnswers();
    await sendWelcome(user, 'shutdown-stuck');

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(1);
    expect(worker.stderr()).toMatch(/worker: shutdown took longer than 1000 ms, exiting/);
    mail.releaseHeld();
  });
});
