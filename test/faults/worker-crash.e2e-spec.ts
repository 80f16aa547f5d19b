import { createUser } from '../factories/user.factory.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { User } from '../../src/generated/prisma/client.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { createAudience, createMember } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { startWorkerProcess } from './fault-helpers.js';

/** Short locks so a dead worker's jobs are taken back in seconds (production keeps BullMQ's 30 s). */
const FAST_RECOVERY = { QUEUE_LOCK_DURATION_MS: '3000', QUEUE_STALLED_INTERVAL_MS: '500' };

/**
 * The compiled worker is killed with SIGKILL while two jobs are in flight: a broadcast between two
 * batches and a single e-mail whose provider request was accepted but never answered. No shutdown hook
 * runs. A new worker process must finish both, with every e-mail delivered and recorded exactly once.
 */
describe('fault injection: a worker killed mid-job', () => {
  let env: TestEnv;
  let api: ApiApp;
  let mail: FakeEmailApi;
  let admin: string;
  let audience: User[];
  let solo: User;

  beforeAll(async () => {
    mail = await FakeEmailApi.start();
    env = await TestEnv.create({
      env: {
        ...mail.env(),
      },
    });
    env.onClose(() => mail.close());
    api = await env.startApi();
    // Made in the database: no signup e-mails to count.
    await createUser(api.prisma, { identityUserId: 'user_admin', email: 'admin@example.com' });
    admin = await api.bearer('user_admin', 'admin@example.com');
    // Two pages of the audience (100 per batch call).
    audience = await createAudience(api.prisma, 'crash', 150, { consent: true, tier: 'PRO' });
    solo = await createMember(api.prisma, 'solo');
  });
  afterAll(() => env.close());

  it('retries the interrupted jobs in a new worker process; every effect happens once', async () => {
    // The first batch is answered; every later request is delivered but never answered.
    mail.hangAfter(1);
    const first = await startWorkerProcess(env, FAST_RECOVERY);

    const res = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', admin)
      .send({ template_key: 'newsletter', audience: { tiers: ['PRO'] } });
    expect(res.status).toBe(201);
    const runId: string = res.body.id;
    const recipients = (status: 'sent' | 'pending') =>
      api.prisma.broadcastRecipient.count({ where: { runId, status } });
    // The first page settled; the second reserved (pending) before its batch request went out.
    await waitFor(
      async () =>
        mail.hungCount === 1 && (await recipients('sent')) === 100 && (await recipients('pending')) === 50,
      15_000,
      50,
    );

    const queues = api.app.get(QueueService);
    await queues.add(
      JOBS.sendEmail,
      { userId: solo.id, templateKey: 'welcome', idempotencyKey: 'crash-solo' },
      { jobId: 'crash-solo' },
    );
    await waitFor(async () => mail.hungCount === 2, 15_000, 50);
    expect(await queues.queue('broadcasts').getJobState(`broadcast-${runId}`)).toBe('active');
    expect(await queues.queue('email').getJobState('crash-solo')).toBe('active');

    first.child.kill('SIGKILL');
    await first.exited;
    mail.stopHanging();
    await startWorkerProcess(env, FAST_RECOVERY);

    const run = () => api.prisma.broadcastRun.findUniqueOrThrow({ where: { id: runId } });
    const soloMail = () => api.prisma.emailMessage.findMany({ where: { idempotencyKey: 'crash-solo' } });
    await waitFor(
      async () => (await run()).status === 'done' && (await soloMail()).length === 1,
      20_000,
      100,
    );

    // The broadcast: 150 recipients, one delivery and one row each. The batch that hung was sent again
    // under the same idempotency key and answered from the provider's record, not delivered twice.
    expect(await run()).toMatchObject({
      sentCount: 150,
      failedCount: 0,
      skippedCount: 0,
      recipientsTotal: 150,
    });
    expect(await recipients('sent')).toBe(150);
    expect(await recipients('pending')).toBe(0);
    expect(await api.prisma.emailMessage.count({ where: { broadcastRunId: runId, status: 'sent' } })).toBe(
      150,
    );
    for (const member of audience) expect(mail.deliveredTo(member.email)).toHaveLength(1);
    const batches = mail.requests.filter((r) => r.path === '/emails/batch');
    expect(batches.map((r) => r.status)).toEqual([200, 'hung', 200]);
    expect(batches[2].headers['idempotency-key']).toBe(batches[1].headers['idempotency-key']);
    expect(
      await api.prisma.auditLog.count({ where: { action: 'broadcast.finished', resourceId: runId } }),
    ).toBe(1);

    // The single e-mail: delivered once, one log row, one audit entry.
    expect(mail.deliveredTo(solo.email)).toHaveLength(1);
    expect(await soloMail()).toEqual([expect.objectContaining({ status: 'sent', userId: solo.id })]);
    expect(
      await api.prisma.auditLog.count({
        where: { action: 'email.sent', resourceId: (await soloMail())[0].id },
      }),
    ).toBe(1);

    // Both jobs were taken back from the dead worker (stalled), not failed and not run twice to the end.
    const broadcastJob = await queues.queue('broadcasts').getJob(`broadcast-${runId}`);
    expect(await broadcastJob!.getState()).toBe('completed');
    expect(broadcastJob!.stalledCounter).toBe(1);
    const soloJob = await queues.queue('email').getJob('crash-solo');
    expect(await soloJob!.getState()).toBe('completed');
    expect(soloJob!.stalledCounter).toBe(1);
  });
});
