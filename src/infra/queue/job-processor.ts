import { WorkerHost } from '@nestjs/bullmq';
import { Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Job } from 'bullmq';
import { isScheduledJob, type JobDef } from './queues.js';
import type { JobRegistry } from './job-registry.js';
import { onJobEntries } from './on-job.decorator.js';
import type { JobRunRecorder } from './job-run.recorder.js';
import { markOutage } from './job-failure.js';
import { logQueueErrors } from './queue-errors.js';
import { WORKER_OPTIONS } from './worker-options.js';
import { inSpan, jobTraceContext, SpanKind, tracingEnabled } from '../tracing/spans.js';

/** Where @nestjs/bullmq's @Processor keeps its options (PROCESSOR_METADATA, not exported by the package). */
const PROCESSOR_METADATA = 'bullmq:processor_metadata';

/** True when BullMQ will not retry this job after a failure (its last attempt). */
export const isFinalAttempt = (job: Job): boolean => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/** `token` is the worker's lock token (needed to move an active job, e.g. back to wait). */
export type JobHandler = (job: Job, token?: string) => Promise<unknown>;

/**
 * Base of every BullMQ processor: its `@OnJob(JOBS.x)` methods are the handlers of its queue's jobs, found
 * here and registered with the JobRegistry so the worker knows every job has a home. Handlers call service
 * methods only. The runs of scheduled jobs (SCHEDULES) are recorded in job_runs for admin stats.
 */
export abstract class JobProcessor extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  protected readonly logger = new Logger(this.constructor.name);
  private readonly handlers = new Map<string, JobHandler>();

  protected constructor(
    private readonly registry: JobRegistry,
    private readonly recorder?: JobRunRecorder,
  ) {
    super();
    for (const { job, method } of onJobEntries(this)) {
      const handler = (this as unknown as Record<string | symbol, JobHandler>)[method];
      this.handle(job, (j, token) => handler.call(this, j, token));
    }
  }

  private handle(job: JobDef, handler: JobHandler): void {
    if (job.queue !== this.queueName()) {
      throw new Error(`${this.constructor.name}: job ${job.name} belongs to queue ${job.queue}`);
    }
    const recorder = this.recorder;
    if (!isScheduledJob(job)) {
      this.handlers.set(job.name, handler);
    } else if (recorder) {
      this.handlers.set(job.name, (j, t) => recorder.track(job.name, () => handler(j, t)));
    } else {
      // Admin stats lists every scheduled job with its last run: a scheduled job must record its runs.
      throw new Error(
        `${this.constructor.name}: scheduled job ${job.name} must record its runs (JobRunRecorder)`,
      );
    }
    this.registry.register(job.queue, [job.name]);
  }

  /** The queue named in this class's @Processor decorator. */
  private queueName(): string | undefined {
    const meta = Reflect.getMetadata(PROCESSOR_METADATA, this.constructor) as
      string | { name?: string } | undefined;
    return typeof meta === 'string' ? meta : meta?.name;
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

  /**
   * Runs the job's handler. An attempt that failed on an outage (a store or provider unavailable) is
   * recorded with OUTAGE_MARK, so the outbox relay pushes the job again when its last attempt fails so.
   */
  async process(job: Job, token?: string): Promise<unknown> {
    try {
      return await this.runHandler(job, token);
    } catch (err) {
      throw markOutage(err);
    }
  }

  private runHandler(job: Job, token?: string): Promise<unknown> {
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
