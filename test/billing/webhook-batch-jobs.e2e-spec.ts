import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Job } from 'bullmq';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import { JOBS } from '../../src/infra/queue/queues.js';
import {
  type BillingEnvelope,
  BillingWebhookService,
} from '../../src/modules/billing/intake/billing-webhook.service.js';
import {
  batchJobIdOf,
  jobIdOf,
  WebhookInboxService,
} from '../../src/modules/webhooks/webhook-inbox.service.js';
import { checkoutCreated } from '../support/billing.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * Issue 15: one BullMQ job per intake group. Deliveries whose intake statements start within a few
 * milliseconds of each other share one job (`apply-webhooks`, named after the group's id, stored on the rows
 * as intake_batch); a failing event fails the job, whose retry applies only what is still RECEIVED; the relay
 * leaves a row alone while its group's job is live. No worker runs here: the tests play the worker's part.
 */
describe('billing webhooks: one job per intake group', () => {
  let env: TestEnv;
  let api: ApiApp;
  let inbox: WebhookInboxService;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    inbox = api.app.get(WebhookInboxService);
  });
  afterAll(() => env.close());

  const queue = () => api.app.get(QueueService).queue(JOBS.applyWebhooks.queue);
  /** The receiver's intake after the signature check: the envelope validated, then accept(). */
  const ingest = (event: object) => api.app.get(BillingWebhookService).ingest(event as BillingEnvelope);

  /** Signed-and-verified subscription.created envelopes of fresh users, as the receiver passes them on. */
  async function envelopes(count: number) {
    const out = [];
    for (let i = 0; i < count; i++) {
      const { user, created } = await checkoutCreated(api);
      out.push({ user, event: created });
    }
    return out;
  }

  /**
   * The archive rows of those events, with the intake group that accepted each and the transaction that
   * wrote it (xmin: the intake statement, for a row no worker has touched).
   */
  async function rowsOf(eventIds: string[]) {
    return api.prisma.$queryRaw<
      { id: string; event_id: string; intake_batch: string; status: string; xmin: string }[]
    >`
      SELECT id, event_id, intake_batch::text AS intake_batch, status::text AS status, xmin::text AS xmin
      FROM webhook_events WHERE provider = 'billing' AND event_id = ANY(${eventIds}::text[])`;
  }

  /** The apply-webhooks jobs that cover any of those rows. */
  async function batchJobsOf(rowIds: string[]): Promise<Job<{ ids: string[] }>[]> {
    const jobs = (await queue().getJobs(['waiting', 'delayed', 'prioritized'])) as Job<{ ids: string[] }>[];
    return jobs.filter(
      (job) => job.name === JOBS.applyWebhooks.name && job.data.ids.some((id) => rowIds.includes(id)),
    );
  }

  it('gives the deliveries of one intake group one job, and every accepted row exactly one job', async () => {
    const sent = await envelopes(20);
    // All at once, as concurrent deliveries arrive: the first statement goes out alone, the rest share.
    const acceptances = await Promise.all(sent.map(({ event }) => ingest(event)));
    expect(acceptances.every((a) => !a.duplicate)).toBe(true);

    const rows = await rowsOf(sent.map(({ event }) => event.event_id));
    expect(rows).toHaveLength(20);
    const jobs = await batchJobsOf(rows.map((row) => row.id));
    expect(jobs.length).toBeLessThan(20);
    // Each row in exactly one job, and that job is named after the group that accepted the row.
    const covered = jobs.flatMap((job) => job.data.ids);
    expect([...covered].sort()).toEqual(rows.map((row) => row.id).sort());
    for (const job of jobs) {
      const batches = new Set(rows.filter((row) => job.data.ids.includes(row.id)).map((r) => r.intake_batch));
      expect([...batches]).toEqual([job.id!.replace(/^webhooks-/, '')]);
      expect(job.id).toBe(batchJobIdOf([...batches][0]));
    }
    expect(Math.max(...jobs.map((job) => job.data.ids.length))).toBeGreaterThan(1);
    // SPEC: job results are kept 24 hours; a group's job keeps its result (the outcome counts) as long.
    for (const job of jobs) expect(job.opts.removeOnComplete).toEqual({ age: 24 * 3600 });

    // The worker's part: each job applies its rows once; a second run of a job finds them done.
    for (const job of jobs) {
      expect(await inbox.applyMany(job.data.ids, false)).toEqual({
        processed: job.data.ids.length,
        skipped: 0,
        duplicate: 0,
        failed: 0,
      });
      await job.remove();
    }
    expect(
      await inbox.applyMany(
        rows.map((row) => row.id),
        false,
      ),
    ).toMatchObject({ duplicate: 20 });
    for (const { user } of sent) {
      expect((await api.prisma.user.findUniqueOrThrow({ where: { id: user.id } })).currentTier).toBe('PRO');
      expect(await api.prisma.creditTransaction.count({ where: { userId: user.id } })).toBe(1);
    }
  });

  it('gives the statements started within the window one job, and a statement started after it another', async () => {
    const sent = await envelopes(21);
    const inbound = ({ event }: (typeof sent)[number]) => ({
      eventId: event.event_id,
      eventType: event.event_type,
      occurredAt: new Date(event.occurred_at),
      payload: event,
    });
    // Twenty deliveries in one tick: the first goes out alone at once and opens a group; the other 19
    // share the next statement, which starts within the group's window (its linger is shorter).
    const early = await Promise.all(sent.slice(0, 20).map((s) => inbox.accept('billing', inbound(s))));
    // Answered, so the group's job was pushed and its window is over: this one opens a group of its own.
    const late = await inbox.accept('billing', inbound(sent[20]));

    const rows = await rowsOf(sent.map(({ event }) => event.event_id));
    const earlyRows = rows.filter((row) => early.some((a) => a.id === row.id));
    const [lateRow] = rows.filter((row) => row.id === late.id);
    expect(earlyRows).toHaveLength(20);
    expect(new Set(earlyRows.map((row) => row.xmin)).size).toBe(2);
    expect(new Set(earlyRows.map((row) => row.intake_batch)).size).toBe(1);
    expect(lateRow.intake_batch).not.toBe(earlyRows[0].intake_batch);

    const jobs = await batchJobsOf(rows.map((row) => row.id));
    expect(jobs.map((job) => job.id).sort()).toEqual(
      [batchJobIdOf(earlyRows[0].intake_batch), batchJobIdOf(lateRow.intake_batch)].sort(),
    );
    const earlyJob = jobs.find((job) => job.id === batchJobIdOf(earlyRows[0].intake_batch))!;
    expect([...earlyJob.data.ids].sort()).toEqual(earlyRows.map((row) => row.id).sort());
    const lateJob = jobs.find((job) => job.id === batchJobIdOf(lateRow.intake_batch))!;
    expect(lateJob.data.ids).toEqual([late.id]);
    for (const job of jobs) await job.remove();
  });

  it('fails a job whose event failed after applying the others; its retry applies only that one', async () => {
    const sent = await envelopes(4);
    const bad = sent[2];
    const acceptances = await Promise.all(sent.map(({ event }) => ingest(event)));
    const ids = acceptances.map((a) => a.id!);
    // A fault in the database for the bad event's grant: not the payload's fault, so it is retried.
    await api.prisma.$executeRawUnsafe(`
      CREATE FUNCTION batch_job_fault() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'injected fault'; END $$`);
    await api.prisma.$executeRawUnsafe(`
      CREATE TRIGGER batch_job_fault BEFORE INSERT ON credit_transactions FOR EACH ROW
      WHEN (NEW.user_id = '${bad.user.id}') EXECUTE FUNCTION batch_job_fault()`);
    try {
      // A non-final attempt: the job fails (BullMQ retries it with backoff) once every event has run.
      await expect(inbox.applyMany(ids, false)).rejects.toThrow(/injected fault/);
      const statuses = new Map((await rowsOf(sent.map(({ event }) => event.event_id))).map((r) => [r.id, r]));
      for (const [index, id] of ids.entries()) {
        expect(statuses.get(id)?.status).toBe(index === 2 ? 'RECEIVED' : 'PROCESSED');
      }
      // The retry applies only the one still RECEIVED; on the last attempt it is recorded FAILED.
      expect(await inbox.applyMany(ids, true)).toEqual({ processed: 0, skipped: 0, duplicate: 3, failed: 1 });
      expect(await api.prisma.webhookEvent.findUniqueOrThrow({ where: { id: ids[2] } })).toMatchObject({
        status: 'FAILED',
        attempts: 2,
      });
    } finally {
      await api.prisma.$executeRawUnsafe('DROP TRIGGER batch_job_fault ON credit_transactions');
      await api.prisma.$executeRawUnsafe('DROP FUNCTION batch_job_fault()');
    }
    for (const [index, { user }] of sent.entries()) {
      expect(await api.prisma.creditTransaction.count({ where: { userId: user.id } })).toBe(
        index === 2 ? 0 : 1,
      );
    }
  });

  it('relays a stale row only when its group job is gone, then once as a job of its own', async () => {
    const [{ event }] = await envelopes(1);
    const { id } = await ingest(event);
    const [row] = await rowsOf([event.event_id]);
    await api.prisma.webhookEvent.update({
      where: { id: id! },
      data: { receivedAt: new Date(Date.now() - 60_000) },
    });
    const [job] = await batchJobsOf([id!]);
    expect(job.id).toBe(batchJobIdOf(row.intake_batch));

    // Its group's job waits for the worker: nothing to relay.
    expect(await inbox.relay()).toBe(0);
    expect(await queue().getJobState(batchJobIdOf(row.intake_batch))).toBe('waiting');

    // Redis lost that job: the relay gives the row a job of its own, once.
    await job.remove();
    expect(await inbox.relay()).toBe(1);
    const stale = await api.prisma.webhookEvent.findUniqueOrThrow({ where: { id: id! } });
    const own = await queue().getJob(jobIdOf({ ...stale, batch: row.intake_batch }));
    expect(own).toMatchObject({ name: JOBS.processWebhook.name, data: { id } });
    expect(await inbox.relay()).toBe(0);

    expect(await inbox.apply(id!, false)).toEqual({ outcome: 'processed' });
    expect(await inbox.relay()).toBe(0);
  });
});
