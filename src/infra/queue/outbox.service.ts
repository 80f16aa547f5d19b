import { Injectable, Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { MetricsService } from '../metrics/metrics.service.js';
import { PrismaService, type Tx } from '../prisma/prisma.service.js';
import { Unit } from '../prisma/unit-of-work.js';
import { afterOutage, outageRepushDelayMs } from './job-failure.js';
import { QueueService } from './queue.service.js';
import type { JobDef, QueueName } from './queues.js';

/** Longest a request waits for its after-commit push before answering (the push goes on meanwhile). */
export const DISPATCH_WAIT_MS = 1000;

interface OutboxRow {
  id: string;
  queue: string;
  job_name: string;
  job_id: string;
  payload: object;
}

interface OpenRow extends OutboxRow {
  created_at: Date;
  dispatched_at: Date;
  /** Pushes so far (the first, then the relay's). */
  attempts: number;
}

/**
 * Transactional outbox. A job caused by a database change is written in the same transaction as the
 * change, pushed to BullMQ right after commit, and re-pushed by the worker's relay when that push failed
 * (Redis down, process killed) or when the job vanished from Redis before it finished (Redis restarted
 * empty). The BullMQ job id is the outbox job id, so a double push is harmless.
 */
@Injectable()
export class OutboxService {
  private readonly logger = new Logger(OutboxService.name);
  /** The entries each open unit of work has written, pushed together once it commits. */
  private readonly written = new WeakMap<Unit, string[]>();

  constructor(
    private readonly prisma: PrismaService,
    private readonly queues: QueueService,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Records a job inside the caller's unit of work (UnitOfWork.run) and pushes it after that unit commits;
   * a rollback leaves nothing to push. Refused (OutsideUnitOfWorkError) for a transaction opened elsewhere,
   * whose commit nobody would follow with the push. Returns the outbox entry id.
   */
  async add(tx: Tx, job: JobDef, data: object, jobId = `ob-${randomUUID()}`): Promise<string> {
    const unit = Unit.of(tx, 'OutboxService.add');
    const entry = await tx.outboxEntry.upsert({
      where: { jobId },
      create: { queue: job.queue, jobName: job.name, jobId, payload: data },
      update: {},
      select: { id: true },
    });
    let ids = this.written.get(unit);
    if (!ids) {
      const collected: string[] = [];
      ids = collected;
      this.written.set(unit, collected);
      unit.afterCommit(() => this.dispatch(collected));
    }
    ids.push(entry.id);
    return entry.id;
  }

  /**
   * After commit (the unit of work calls it): push now. Never throws; what fails stays for the relay. The caller (often a webhook
   * the provider times out after a few seconds) waits at most DISPATCH_WAIT_MS: with Redis unreachable a
   * push can take the full command timeout, and the committed work is safe in the outbox either way.
   */
  private async dispatch(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, DISPATCH_WAIT_MS);
    });
    await Promise.race([this.pushNow(ids), waited]);
    clearTimeout(timer);
  }

  private async pushNow(ids: string[]): Promise<void> {
    try {
      const rows = await this.prisma.outboxEntry.findMany({ where: { id: { in: ids }, dispatchedAt: null } });
      for (const row of rows) {
        await this.push({
          id: row.id,
          queue: row.queue,
          job_name: row.jobName,
          job_id: row.jobId,
          payload: row.payload as object,
        });
      }
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'outbox dispatch deferred to the relay');
    }
  }

  /**
   * Of these job ids, those whose outbox entry is still open (not closed by the relay): the relay owns
   * them, pushes them again when lost or failed on an outage (with its backoff) and closes them once their
   * job finished. A sweep that finds lost jobs of its own leaves these alone.
   */
  async openJobIds(jobIds: string[]): Promise<Set<string>> {
    if (jobIds.length === 0) return new Set();
    const rows = await this.prisma.outboxEntry.findMany({
      where: { jobId: { in: jobIds }, completedAt: null },
      select: { jobId: true },
    });
    return new Set(rows.map((row) => row.jobId));
  }

  /**
   * One relay pass, safe on several workers at once: pushes the entries still undispatched after
   * `olderThanMs`, then checks the dispatched ones against BullMQ (see `reconcile`). Returns how many jobs
   * it pushed (first pushes and pushes of lost jobs).
   */
  async relay(limit = 500, olderThanMs = 5000): Promise<number> {
    const pushed = await this.pushPending(limit, olderThanMs);
    return pushed + (await this.reconcile(limit, olderThanMs));
  }

  private pushPending(limit: number, olderThanMs: number): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<OutboxRow[]>`
        SELECT id, queue, job_name, job_id, payload FROM outbox
        WHERE dispatched_at IS NULL AND created_at < now() - make_interval(secs => ${olderThanMs / 1000})
        ORDER BY created_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED`;
      let pushed = 0;
      for (const row of rows) {
        if (!(await this.push(row, tx))) break;
        pushed += 1;
      }
      return pushed;
    });
  }

  /**
   * An entry stays open after its push until its job has finished: Redis restarted without its data (no
   * AOF, a failover to an empty replica, a flush) loses queued and active jobs, and the commit that caused
   * them must not lose its follow-up work with them. Each open entry dispatched `olderThanMs` ago is
   * looked up in BullMQ: completed or failed for good closes it, a job still waiting, delayed or active is
   * left alone, a job BullMQ does not know is pushed again under the same id. A job whose last attempt
   * failed on an outage (`afterOutage`: database, Redis or a provider unavailable longer than its
   * attempts) is removed and pushed again under its id while its entry is younger than
   * OUTAGE_RETRY_WINDOW_MS; older, it is closed as given up (logged, counted). Closed entries are pruned
   * after 7 days. Handlers are idempotent (their effects are keyed), so a job that did run and was then
   * lost before BullMQ recorded it runs once more without a second effect.
   */
  private reconcile(limit: number, olderThanMs: number): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<OpenRow[]>`
        SELECT id, queue, job_name, job_id, payload, created_at, dispatched_at, attempts FROM outbox
        WHERE completed_at IS NULL AND dispatched_at IS NOT NULL
          AND dispatched_at < now() - make_interval(secs => ${olderThanMs / 1000})
        ORDER BY dispatched_at
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED`;
      let pushed = 0;
      for (const row of rows) {
        let state: string;
        let outage: 'push' | 'wait' | null = null;
        try {
          const queue = this.queues.queue(row.queue as QueueName);
          state = await queue.getJobState(row.job_id);
          if (state === 'failed') outage = await this.retryAfterOutage(row, await queue.getJob(row.job_id));
        } catch (err) {
          // Redis unreachable: the next pass looks again.
          this.logger.warn({ err: (err as Error).message }, 'outbox check deferred');
          break;
        }
        if (outage === 'wait') continue;
        if (outage === 'push') {
          if (!(await this.push(row, tx))) break;
          pushed += 1;
        } else if (state === 'completed' || state === 'failed') {
          await tx.outboxEntry.update({ where: { id: row.id }, data: { completedAt: new Date() } });
        } else if (state === 'unknown') {
          this.logger.warn(
            { queue: row.queue, job_name: row.job_name, job_id: row.job_id },
            'job lost from Redis before it finished; pushing it again',
          );
          if (!(await this.push(row, tx))) break;
          pushed += 1;
        }
      }
      await tx.$executeRaw`DELETE FROM outbox WHERE completed_at < now() - interval '7 days'`;
      return pushed;
    });
  }

  /**
   * What to do with a failed job: `push` it again (its last attempt failed on an outage, its entry is
   * within OUTAGE_RETRY_WINDOW_MS and its last push is older than the backoff, outageRepushDelayMs),
   * `wait` for the backoff, or null (close the entry: another failure, or given up). The failed job is
   * removed before a push, as BullMQ keeps it 7 days under the same id and would ignore the push (the
   * webhook relay and the broadcast sweep do the same). Should the push then fail, the next pass finds the
   * job `unknown` and pushes it.
   */
  private async retryAfterOutage(row: OpenRow, job: Job | undefined): Promise<'push' | 'wait' | null> {
    const next = job ? afterOutage(job, row.created_at) : null;
    if (!job || !next) return null;
    const fields = { queue: row.queue, job_name: row.job_name, job_id: row.job_id, reason: job.failedReason };
    if (next === 'given_up') {
      this.metrics.outboxOutageRetries.inc({ job_name: row.job_name, outcome: 'abandoned' });
      this.logger.error(fields, 'job failed on an outage past its retry window; giving up');
      return null;
    }
    if (Date.now() - row.dispatched_at.getTime() < outageRepushDelayMs(row.attempts)) return 'wait';
    await job.remove();
    this.metrics.outboxOutageRetries.inc({ job_name: row.job_name, outcome: 'pushed' });
    this.logger.warn(fields, 'job failed on an outage; pushing it again');
    return 'push';
  }

  private async push(row: OutboxRow, tx?: Tx): Promise<boolean> {
    const db = tx ?? this.prisma;
    try {
      await this.queues.add({ queue: row.queue, name: row.job_name } as JobDef, row.payload, {
        jobId: row.job_id,
      });
      await db.outboxEntry.update({
        where: { id: row.id },
        data: { dispatchedAt: new Date(), attempts: { increment: 1 } },
      });
      return true;
    } catch (err) {
      await db.outboxEntry
        .update({
          where: { id: row.id },
          data: { attempts: { increment: 1 }, lastError: (err as Error).message.slice(0, 500) },
        })
        .catch(() => undefined);
      return false;
    }
  }
}
