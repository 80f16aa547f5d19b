import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { MetricsService } from '../../src/infra/metrics/metrics.service.js';
import { OUTAGE_MARK, OUTAGE_RETRY_WINDOW_MS } from '../../src/infra/queue/job-failure.js';
import { OutboxService } from '../../src/infra/queue/outbox.service.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { createUser } from '../factories/user.factory.js';
import { TestEnv } from '../support/test-env.js';
import { waitFor } from '../support/wait.js';
import { directDb } from './fault-helpers.js';

/**
 * The first push of each job here is the test's own, standing in for the after-commit push, with two
 * attempts 100 ms apart instead of five from 2 s: the same "every attempt failed" end in a second, not
 * ~30 s. The relay's pushes use the production options.
 */
const SHORT = { attempts: 2, backoff: { type: 'fixed', delay: 100 } };

/**
 * PostgreSQL unreachable for longer than a job's attempts: the job fails for good in BullMQ. The outbox
 * relay must push it again once the database is back (not close its row as finished), and the effect
 * happens once. A job that fails for any other reason still closes its row.
 */
describe('fault injection: an outage outlasting an outbox job attempts', () => {
  let env: TestEnv;
  let worker: INestApplication;
  let proxy: TcpProxy;
  let db: PrismaService;

  beforeAll(async () => {
    env = await TestEnv.create();
    proxy = await TcpProxy.start(env.config.database.url);
    env.onClose(() => proxy.close());
    worker = await env.startWorker({
      config: env.configWith({ DATABASE_URL: proxy.rewrite(env.config.database.url) }),
    });
    db = directDb(env);
  }, 60_000);
  afterAll(() => env.close());

  /** An outbox row as a commit writes it, dispatched a minute ago by a push the test makes itself. */
  async function dispatched(jobId: string, data: object, job = JOBS.postSignup): Promise<void> {
    await db.outboxEntry.create({ data: { queue: job.queue, jobName: job.name, jobId, payload: data } });
    await worker.get(QueueService).add(job, data, { jobId, ...SHORT });
    await db.outboxEntry.updateMany({
      where: { jobId },
      data: { dispatchedAt: new Date(Date.now() - 60_000) },
    });
  }

  /**
   * A welcome job (post-signup) of a new user, dispatched while PostgreSQL is cut: it fails for good on the
   * outage (its reason carries OUTAGE_MARK), then the database is back.
   */
  async function failedThroughOutage(name: string) {
    const user = await createUser(db, {
      identityUserId: `user_outbox_${name}`,
      email: `${name}@example.com`,
    });
    const jobId = `post-signup-${user.id}`;
    const queue = worker.get(QueueService).queue(JOBS.postSignup.queue);
    proxy.cut('reset');
    await dispatched(jobId, { userId: user.id });
    await waitFor(async () => (await queue.getJobState(jobId)) === 'failed', 30_000, 100);
    expect((await queue.getJob(jobId))!.failedReason).toMatch(new RegExp(`^${OUTAGE_MARK}`));
    proxy.restore();
    return { user, jobId, queue };
  }

  it('pushes a job that failed through a database outage again: the welcome e-mail goes out once', async () => {
    const { user, jobId, queue } = await failedThroughOutage('outage');

    const outbox = worker.get(OutboxService);
    expect(await outbox.relay(500, 0)).toBe(1);
    const open = await db.outboxEntry.findFirstOrThrow({ where: { jobId } });
    expect(open.completedAt).toBeNull();
    await waitFor(async () => (await queue.getJobState(jobId)) === 'completed', 20_000, 100);
    await waitFor(async () => (await db.emailMessage.count({ where: { userId: user.id } })) > 0, 20_000, 100);

    // The next passes close the row and push nothing more; the e-mail stays single.
    await outbox.relay(500, 0);
    expect(await outbox.relay(500, 0)).toBe(0);
    const closed = await db.outboxEntry.findFirstOrThrow({ where: { jobId } });
    expect(closed.completedAt).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await db.emailMessage.count({ where: { userId: user.id } })).toBe(1);
  }, 90_000);

  it('waits the backoff before pushing again a job that keeps failing on an outage', async () => {
    const { user, jobId, queue } = await failedThroughOutage('backoff');
    // Pushed twice already (the first push and one relay push), the last a second ago: within its 10 s.
    await db.outboxEntry.updateMany({
      where: { jobId },
      data: { attempts: 2, dispatchedAt: new Date(Date.now() - 1000) },
    });

    const outbox = worker.get(OutboxService);
    expect(await outbox.relay(500, 0)).toBe(0);
    expect(await queue.getJobState(jobId)).toBe('failed');
    expect((await db.outboxEntry.findFirstOrThrow({ where: { jobId } })).completedAt).toBeNull();

    // The backoff has passed: pushed again, and the welcome e-mail goes out once.
    await db.outboxEntry.updateMany({
      where: { jobId },
      data: { dispatchedAt: new Date(Date.now() - 11_000) },
    });
    expect(await outbox.relay(500, 0)).toBe(1);
    await waitFor(async () => (await queue.getJobState(jobId)) === 'completed', 20_000, 100);
    await waitFor(async () => (await db.emailMessage.count({ where: { userId: user.id } })) > 0, 20_000, 100);
    expect(await db.emailMessage.count({ where: { userId: user.id } })).toBe(1);
  }, 90_000);

  it('gives up a job that failed through an outage past the retry window: logged, counted, its row closed', async () => {
    const { user, jobId, queue } = await failedThroughOutage('given_up');
    // Time travel: the commit that wrote the row is older than the window.
    await db.outboxEntry.updateMany({
      where: { jobId },
      data: { createdAt: new Date(Date.now() - OUTAGE_RETRY_WINDOW_MS - 3_600_000) },
    });
    const abandoned = async () =>
      (await worker.get(MetricsService).outboxOutageRetries.get()).values.find(
        (v) => v.labels.job_name === JOBS.postSignup.name && v.labels.outcome === 'abandoned',
      )?.value ?? 0;
    const before = await abandoned();

    expect(await worker.get(OutboxService).relay(500, 0)).toBe(0);
    const row = await db.outboxEntry.findFirstOrThrow({ where: { jobId } });
    expect(row.completedAt).not.toBeNull();
    expect(await abandoned()).toBe(before + 1);
    const logged = env.logs.lines
      .map((line) => JSON.parse(line) as { level: number; msg: string; job_id?: string; reason?: string })
      .filter((line) => line.job_id === jobId);
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 50,
        msg: 'job failed on an outage past its retry window; giving up',
        reason: expect.stringMatching(new RegExp(`^${OUTAGE_MARK}`)),
      }),
    );
    // Not pushed: the job stays failed, the closed row is not looked at again, and no e-mail was written.
    expect(await queue.getJobState(jobId)).toBe('failed');
    expect(await worker.get(OutboxService).relay(500, 0)).toBe(0);
    expect(await abandoned()).toBe(before + 1);
    expect(await db.emailMessage.count({ where: { userId: user.id } })).toBe(0);
  }, 90_000);

  it('still closes the row of a job that failed for a reason other than an outage', async () => {
    // Not a uuid: PostgreSQL refuses the lookup, a bug in the payload that no re-push would fix.
    const jobId = `post-signup-broken-${Date.now()}`;
    const queue = worker.get(QueueService).queue(JOBS.postSignup.queue);
    await dispatched(jobId, { userId: 'not-a-uuid' });
    await waitFor(async () => (await queue.getJobState(jobId)) === 'failed', 20_000, 100);
    expect((await queue.getJob(jobId))!.failedReason).not.toMatch(new RegExp(`^${OUTAGE_MARK}`));

    expect(await worker.get(OutboxService).relay(500, 0)).toBe(0);
    const row = await db.outboxEntry.findFirstOrThrow({ where: { jobId } });
    expect(row.completedAt).not.toBeNull();
    expect(await queue.getJobState(jobId)).toBe('failed');
  }, 60_000);
});
