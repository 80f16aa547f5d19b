import { WorkerHost } from '@nestjs/bullmq';
import { Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Job } from 'bullmq';
import { isScheduledJob, type JobDef } from './queues.js';
import type { JobRegistry } from './job-registry.js';
import type { JobRunRecorder } from './job-run.recorder.js';
import { logQueueErrors } from './queue-errors.js';
import { WORKER_OPTIONS } from './worker-options.js';
import { inSpan, jobTraceContext, SpanKind, tracingEnabled } from '../tracing/spans.js';

/** True when BullMQ will not retry this job after a failure (its last attempt). */
export const isFinalAttempt = (job: Job): boolean => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/** `token` is the worker's lock token (needed to move an active job, e.g. back to wait). */
export type JobHandler = (job: Job, token?: string) => Promise<unknown>;

/**
 * Base of every BullMQ processor: one handler per job name of its queue, registered with the
 * JobRegistry so the worker knows every job has a home. Handlers call service methods only.
 * Subclasses call handle() in their constructor.
 */
export abstract class JobProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  protected readonly logger = new Logger(this.constructor.name);
  private readonly handlers = new Map<string, JobHandler>();

  protected constructor(
    private readonly registry: JobRegistry,
    private readonly recorder?: JobRunRecorder,
  ) {
    super();
  }

  /** `recordRun` stores the last run in job_runs (scheduled jobs). */
  protected handle(job: JobDef, handler: JobHandler, options: { recordRun?: boolean } = {}): void {
    const recorder = this.recorder;
    // Admin stats lists every scheduled job with its last run: a scheduled job must record its runs.
    if (isScheduledJob(job) && !(options.recordRun && recorder)) {
      throw new Error(
        `${this.constructor.name}: scheduled job ${job.name} must record its runs (JobRunRecorder)`,
      );
    }
    this.handlers.set(
      job.name,
      options.recordRun && recorder ? (j, t) => recorder.track(job.name, () => handler(j, t)) : handler,
    );
    this.registry.register(job.queue, [job.name]);
  }

  onApplicationBootstrap(): void {
    const worker = this.startedWorker();
    if (!worker) return;
    // A processor without WORKER_OPTIONS would keep BullMQ's 30 s lock whatever the configuration says.
    if (worker.opts.lockDuration !== WORKER_OPTIONS.lockDuration) {
      throw new Error(`${this.constructor.name}: pass WORKER_OPTIONS to @Processor (worker-options.ts)`);
    }
    logQueueErrors(worker, this.logger, `worker:${worker.name}`);
  }

  /**
   * Stops taking jobs and waits for the active ones while the database and Redis are still open. Nest
   * would otherwise close the BullMQ workers only at application shutdown, after every module's
   * onModuleDestroy, so an active job would lose its database pool half-way (a SIGTERM'd deploy).
   */
  async onModuleDestroy(): Promise<void> {
    await this.startedWorker()?.close();
  }

  private startedWorker() {
    try {
      return this.worker;
    } catch {
      return null; // never started (no worker for this processor)
    }
  }

  async process(job: Job, token?: string): Promise<unknown> {
    const handler = this.handlers.get(job.name);
    if (!handler) throw new Error(`no handler for job ${job.queueName}/${job.name}`);
    if (!tracingEnabled()) return handler(job, token);
    return inSpan(
      `job ${job.queueName}/${job.name}`,
      {
        kind: SpanKind.CONSUMER,
        parent: jobTraceContext(job.opts),
        attributes: {
          'messaging.system': 'bullmq',
          'messaging.destination.name': job.queueName,
          'messaging.operation.name': job.name,
          'messaging.message.id': job.id ?? '',
          'bullmq.job.attempt': job.attemptsMade + 1,
        },
      },
      () => handler(job, token),
    );
  }
}
