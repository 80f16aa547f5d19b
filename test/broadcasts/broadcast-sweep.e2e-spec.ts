import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { User } from '../../src/generated/prisma/client.js';
import { HttpClient } from '../../src/infra/http/http-client.js';
import {
  OUTAGE_MARK,
  OUTAGE_RETRY_WINDOW_MS,
  outageRepushDelayMs,
} from '../../src/infra/queue/job-failure.js';
import { OutboxService } from '../../src/infra/queue/outbox.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { BroadcastSweeper } from '../../src/modules/broadcasts/broadcast-sweeper.js';
import { broadcastJobId } from '../../src/modules/broadcasts/broadcasts.service.js';
import { createAudience } from '../factories/audience.factory.js';
import { FakeEmailApi } from '../fakes/email-api.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { signupDay } from '../support/broadcast-runs.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';

/**
 * The job's own first push, two attempts 100 ms apart instead of the production five from 2 s: the same
 * "every attempt failed" end in a second (as test/faults/outbox-outage.e2e-spec.ts). The sweep's push uses
 * the production options.
 */
const SHORT = { attempts: 2, backoff: { type: 'fixed', delay: 100 } };

/**
 * A broadcast whose every job attempt failed on an outage (PostgreSQL, cut between the worker and the
 * database through every attempt): the run is left `running` with its job failed, and the sweep decides by
 * the run's age (docs/decisions/faults.md, "Outage longer than a job's attempts"). The runs are written
 * without an outbox row, so only the sweep can find them. (A provider outage no longer leaves a run so: a
 * batch has 1 + EMAIL_SEND_RETRIES requests in all and then fails, broadcast-retry-budget.e2e-spec.ts.)
 */
describe('broadcast sweep: a run whose job failed for good on an outage', () => {
  let fake: FakeEmailApi;
  let env: TestEnv;
  let api: ApiApp;
  let worker: INestApplication;
  let proxy: TcpProxy;

  beforeAll(async () => {
    fake = await FakeEmailApi.start();
    env = await TestEnv.create({ env: fake.env() });
    env.onClose(() => fake.close());
    proxy = await TcpProxy.start(env.config.database.url);
    env.onClose(() => proxy.close());
    api = await env.startApi();
    // The worker reaches PostgreSQL through the proxy; the test (the API's client) does not.
    worker = await env.startWorker({
      config: env.configWith({ DATABASE_URL: proxy.rewrite(env.config.database.url) }),
    });
    worker.get(HttpClient).backoffBaseMs = 5;
  }, 60_000);
  afterAll(() => env.close());
  beforeEach(() => fake.reset());

  const run = (id: string) => api.prisma.broadcastRun.findUniqueOrThrow({ where: { id } });
  const queue = () => api.app.get(QueueService).queue(JOBS.dispatchBroadcast.queue);

  /** Each test addresses the users who signed up on its own day (signupDay). */
  const day = (n: number) => signupDay(2031, n);

  /**
   * A queued run for `members` whose job fails for good on an outage: the provider takes its batch, then
   * PostgreSQL goes away before the answer is recorded and stays away through every attempt; it is back on
   * return. `data` joins the job's own (`outagePushes`: the pushes so far).
   */
  async function failedOnOutage(
    n: number,
    label: string,
    data: object = {},
  ): Promise<{ runId: string; members: User[] }> {
    const { createdAt, audience } = day(n);
    const members = await createAudience(api.prisma, label, 3, { consent: true, createdAt });
    const { id: runId } = await api.prisma.broadcastRun.create({
      data: { templateKey: 'newsletter', kind: 'marketing', audience, createdBy: 'user:user_admin' },
    });
    const jobId = broadcastJobId(runId);
    fake.holdAnswers();
    await api.app.get(QueueService).add(JOBS.dispatchBroadcast, { runId, ...data }, { jobId, ...SHORT });
    await waitFor(async () => fake.heldCount === 1, 20_000);
    proxy.cut('reset');
    fake.releaseHeld();
    const ended = await waitFor(async () => {
      const state = await queue().getJobState(jobId);
      return state === 'failed' || state === 'completed' ? state : null;
    }, 20_000);
    proxy.restore();
    // Not `completed` with the run ended `failed`: the last attempt's outage leaves the run to a later push.
    expect(ended).toBe('failed');
    const job = await queue().getJob(jobId);
    expect(job!.attemptsMade).toBe(SHORT.attempts);
    expect(job!.failedReason).toMatch(new RegExp(`^${OUTAGE_MARK}`));
    // The outage did not end the run: its batch stays reserved for a later attempt under its key.
    expect(await run(runId)).toMatchObject({ status: 'running', finishedAt: null });
    expect(await api.prisma.broadcastRecipient.count({ where: { runId, status: 'pending' } })).toBe(3);
    // The provider took the batch once; its answer never reached the database.
    expect(fake.requests.map((r) => r.status)).toEqual([200]);
    expect(fake.deliveries).toHaveLength(3);
    return { runId, members };
  }

  it('pushes the job of a run that failed on an outage again within the window: the run resumes and ends done', async () => {
    const { runId, members } = await failedOnOutage(1, 'sweep-again');

    const outcome = await worker.get(BroadcastSweeper).sweep();
    expect(outcome.requeued).toContain(runId);
    expect(outcome.failed).not.toContain(runId);
    // The push counts itself in the job's data, where the next sweep reads the backoff from.
    expect((await queue().getJob(broadcastJobId(runId)))!.data).toMatchObject({ runId, outagePushes: 2 });
    const done = await waitFor(async () => {
      const current = await run(runId);
      return current.status === 'done' ? current : null;
    }, 20_000);
    expect(done).toMatchObject({ sentCount: 3, failedCount: 0, recipientsTotal: 3 });
    // Each member once: the batch the failed attempts had reserved was resent under its key and answered
    // from the provider's idempotency record.
    expect(fake.deliveries.map((d) => d.to).sort()).toEqual(members.map((m) => m.email).sort());
    expect(fake.requests.map((r) => r.status)).toEqual([200, 200]);
    expect(new Set(fake.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('ends a run failed on an outage past the window failed, with the outage as its error, and sends nothing', async () => {
    const { runId } = await failedOnOutage(2, 'sweep-given-up');
    // Time travel: the run was created longer ago than the window (the provider's idempotency window).
    await api.prisma.broadcastRun.update({
      where: { id: runId },
      data: { createdAt: new Date(Date.now() - OUTAGE_RETRY_WINDOW_MS - 3_600_000) },
    });
    const requestsBefore = fake.requests.length;

    const outcome = await worker.get(BroadcastSweeper).sweep();
    expect(outcome.failed).toContain(runId);
    expect(outcome.requeued).not.toContain(runId);
    const ended = await run(runId);
    expect(ended).toMatchObject({ status: 'failed', sentCount: 0 });
    expect(ended.finishedAt).not.toBeNull();
    expect(ended.error).toMatch(new RegExp(`^${OUTAGE_MARK}`));
    const finished = await api.prisma.auditLog.findMany({
      where: { action: 'broadcast.finished', resourceId: runId },
    });
    expect(finished.map((a) => a.details)).toEqual([
      expect.objectContaining({ status: 'failed', sent: 0, pending: 3 }),
    ]);
    // Not pushed again: the failed job stays as it was, and a second sweep leaves the ended run alone.
    expect(await queue().getJobState(broadcastJobId(runId))).toBe('failed');
    expect((await worker.get(BroadcastSweeper).sweep()).requeued).not.toContain(runId);
    expect(fake.requests).toHaveLength(requestsBefore);
    expect(fake.deliveries).toHaveLength(3);
  });

  it('leaves a job that failed on an outage alone while the backoff since its last push lasts', async () => {
    // Its eighth push, just made: the backoff is outageRepushDelayMs(8), the relay's 10-minute cap.
    expect(outageRepushDelayMs(8)).toBe(600_000);
    const { runId } = await failedOnOutage(3, 'sweep-backoff', { outagePushes: 8 });
    const jobId = broadcastJobId(runId);
    const pushed = (await queue().getJob(jobId))!.timestamp;
    const requestsBefore = fake.requests.length;

    const outcome = await worker.get(BroadcastSweeper).sweep();
    expect(outcome.backingOff).toContain(runId);
    expect(outcome.requeued).not.toContain(runId);
    expect(outcome.failed).not.toContain(runId);
    // The same failed job, not removed and added again; the run waits, nothing is sent.
    const job = await queue().getJob(jobId);
    expect(await job!.getState()).toBe('failed');
    expect(job!.timestamp).toBe(pushed);
    expect(await run(runId)).toMatchObject({ status: 'running', finishedAt: null });
    expect(fake.requests).toHaveLength(requestsBefore);
  });

  it('leaves a run whose job has an open outbox entry to the relay, which pushes it with its own backoff', async () => {
    const { runId, members } = await failedOnOutage(4, 'sweep-relay');
    const jobId = broadcastJobId(runId);
    // As BroadcastsService writes it: the entry stays open until the relay sees the job finish.
    await api.prisma.outboxEntry.create({
      data: {
        queue: JOBS.dispatchBroadcast.queue,
        jobName: JOBS.dispatchBroadcast.name,
        jobId,
        payload: { runId },
        attempts: 1,
        dispatchedAt: new Date(Date.now() - 60_000),
      },
    });

    const outcome = await worker.get(BroadcastSweeper).sweep();
    expect(outcome.leftToRelay).toContain(runId);
    expect(outcome.requeued).not.toContain(runId);
    expect(await queue().getJobState(jobId)).toBe('failed');

    // The relay's first re-push is immediate: the run resumes and ends done, each member mailed once.
    expect(await worker.get(OutboxService).relay(500, 0)).toBeGreaterThanOrEqual(1);
    const done = await waitFor(async () => {
      const current = await run(runId);
      return current.status === 'done' ? current : null;
    }, 20_000);
    expect(done).toMatchObject({ sentCount: 3, failedCount: 0 });
    for (const m of members) expect(fake.deliveredTo(m.email)).toHaveLength(1);
  });
});
