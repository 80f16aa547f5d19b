import { createUser } from '../factories/user.factory.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS, tickJobId } from '../../src/infra/queue/queues.js';
import { CreditsReconciler, ORPHAN_AFTER_MS } from '../../src/modules/credits/credits.reconciler.js';
import { JobScheduler } from '../../src/infra/queue/job-scheduler.js';
import { CreditsService } from '../../src/modules/credits/credits.service.js';
import { MeteredCreditsService } from '../../src/modules/credits/metered-credits.service.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

describe('credit reconciler: orphaned metered-call reservations', () => {
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let metered: MeteredCreditsService;
  let reconciler: CreditsReconciler;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    worker = await env.startWorker();
    metered = worker.get(MeteredCreditsService);
    reconciler = worker.get(CreditsReconciler);
  });
  afterEach(() => expectLedgerConsistent(api.prisma));
  afterAll(() => env.close());

  /** A reservation whose process "crashed" `ageMs` ago: spend row and hold, no settle, no refund. */
  async function orphan(userId: string, jobId: string, amount: number, ageMs = ORPHAN_AFTER_MS + 60_000) {
    const reservation = await metered.reserve({ userId, amount, jobId });
    expect(reservation.applied).toBe(true);
    const at = new Date(Date.now() - ageMs);
    await api.prisma.creditHold.update({ where: { jobId }, data: { createdAt: at } });
    await api.prisma.creditTransaction.update({
      where: { jobId_kind: { jobId, kind: 'spend' } },
      data: { createdAt: at },
    });
  }

  it('refunds an orphan exactly once while two reconcilers run at the same time', async () => {
    const user = await createUser(api.prisma);
    await grantCredits(api, user.id, 50);
    await orphan(user.id, `ai-orphan-${user.id}`, 20);
    await orphan(user.id, `ai-orphan2-${user.id}`, 5);
    expect(await worker.get(CreditsService).balance(user.id)).toBe(25);

    const [a, b] = await Promise.all([reconciler.run(), reconciler.run()]);
    expect(a.refunded + b.refunded).toBe(2);
    expect(a.credits + b.credits).toBe(25);
    const refunds = await api.prisma.creditTransaction.findMany({
      where: { userId: user.id, kind: 'refund' },
    });
    expect(refunds.map((r) => [r.jobId, r.delta]).sort()).toEqual(
      [
        [`ai-orphan-${user.id}`, 20],
        [`ai-orphan2-${user.id}`, 5],
      ].sort(),
    );
    expect(await worker.get(CreditsService).balance(user.id)).toBe(50);
    expect(await api.prisma.creditHold.count({ where: { userId: user.id } })).toBe(0);
    expect(await reconciler.run()).toEqual({ refunded: 0, credits: 0 });
  });

  it('leaves young reservations alone and never refunds a settled call', async () => {
    const user = await createUser(api.prisma);
    await grantCredits(api, user.id, 30);
    await orphan(user.id, `ai-young-${user.id}`, 10, ORPHAN_AFTER_MS - 60_000);
    await orphan(user.id, `ai-settled-${user.id}`, 10);
    expect(await metered.settle(`ai-settled-${user.id}`, 4)).toEqual({ reserved: 10, charged: 4 });

    expect((await reconciler.run()).refunded).toBe(0);
    expect(await api.prisma.creditTransaction.count({ where: { userId: user.id, kind: 'refund' } })).toBe(0);
    expect(await worker.get(CreditsService).balance(user.id)).toBe(30 - 10 - 4);
    // The young one is still open; the settle closed the other with the unused 6 credits.
    expect(await metered.state(`ai-young-${user.id}`)).toBe('in_progress');
    expect(await metered.state(`ai-settled-${user.id}`)).toBe('settled');
  });

  it('makes a late settle a no-op once the reconciler refunded the call', async () => {
    const user = await createUser(api.prisma);
    await grantCredits(api, user.id, 10);
    await orphan(user.id, `ai-late-${user.id}`, 10);
    expect((await reconciler.run()).refunded).toBe(1);
    expect(await metered.settle(`ai-late-${user.id}`, 3)).toBeNull();
    expect(await metered.refund(`ai-late-${user.id}`, 'provider_failed')).toBeNull();
    expect(await worker.get(CreditsService).balance(user.id)).toBe(10);
    expect(await metered.state(`ai-late-${user.id}`)).toBe('refunded');
  });

  it('sends no low_balance e-mail for an orphaned reservation it refunds', async () => {
    // PRO: 1000 credits a month, the line at 10% is 100. The reservation alone takes 120 to 40.
    const user = await createUser(api.prisma, { currentTier: 'PRO' });
    await grantCredits(api, user.id, 120);
    await orphan(user.id, `ai-orphan-low-${user.id}`, 80);
    expect((await reconciler.run()).refunded).toBe(1);
    expect(await worker.get(CreditsService).balance(user.id)).toBe(120);
    const alerts = (await api.prisma.outboxEntry.findMany({ where: { jobName: 'send-email' } })).filter(
      (e) => (e.payload as { userId?: string }).userId === user.id,
    );
    expect(alerts).toEqual([]);
  });

  it('runs as the scheduled job in the worker and records the run', async () => {
    const user = await createUser(api.prisma);
    await grantCredits(api, user.id, 7);
    await orphan(user.id, `ai-worker-${user.id}`, 7);
    const queue = worker.get(QueueService);
    await queue.add(JOBS.reconcileCredits, {}, { jobId: `reconcile-test-${user.id}` });
    await waitFor(() =>
      api.prisma.creditTransaction.findUnique({
        where: { jobId_kind: { jobId: `ai-worker-${user.id}`, kind: 'refund' } },
      }),
    );
    const run = await waitFor(() =>
      api.prisma.jobRun.findFirst({ where: { name: JOBS.reconcileCredits.name, lastStatus: 'ok' } }),
    );
    expect(run.runs).toBeGreaterThanOrEqual(1);
    expect(await worker.get(CreditsService).balance(user.id)).toBe(7);
  });

  it('enqueues one reconciler job per minute however many schedulers tick', async () => {
    const scheduler = worker.get(JobScheduler);
    const at = new Date('2030-01-01T10:15:20Z');
    await Promise.all([
      scheduler.enqueue('reconcileCredits', at),
      scheduler.enqueue('reconcileCredits', new Date('2030-01-01T10:15:50Z')),
    ]);
    const queue = worker.get(QueueService).queue(JOBS.reconcileCredits.queue);
    const id = tickJobId(JOBS.reconcileCredits, at, 'minute');
    expect(id).toBe('reconcile-credits-203001011015');
    await waitFor(() => queue.getJob(id));
    const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'delayed', 'failed']);
    expect(jobs.filter((j) => j?.id?.startsWith('reconcile-credits-20300101')).length).toBe(1);
  });
});
