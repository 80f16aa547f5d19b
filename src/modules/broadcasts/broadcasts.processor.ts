import { OnWorkerEvent, Processor } from '@nestjs/bullmq';
import { type Job, WaitingError } from 'bullmq';
import { isOutageFailure, isOutageReason } from '../../infra/queue/job-failure.js';
import { isFinalAttempt, JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JobRunRecorder } from '../../infra/queue/job-run.recorder.js';
import { OnJob } from '../../infra/queue/on-job.decorator.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../infra/queue/worker-options.js';
import { BroadcastDispatcher } from './broadcast-dispatcher.js';
import { BroadcastSweeper } from './broadcast-sweeper.js';

interface DispatchJob {
  runId: string;
}

/** How long a shutting-down worker waits for a run to reach a safe point. */
const STOP_GRACE_MS = 10_000;

@Processor(QUEUES.broadcasts, WORKER_OPTIONS)
export class BroadcastsProcessor extends JobProcessor {
  private readonly inflight = new Map<string, { controller: AbortController; settled: Promise<unknown> }>();

  constructor(
    registry: JobRegistry,
    recorder: JobRunRecorder,
    private readonly dispatcher: BroadcastDispatcher,
    private readonly sweeper: BroadcastSweeper,
  ) {
    super(registry, recorder);
  }

  @OnJob(JOBS.dispatchBroadcast)
  dispatchRun(job: Job<DispatchJob>, token?: string) {
    const controller = new AbortController();
    const key = job.id ?? job.data.runId;
    const done = this.dispatch(job, token, controller.signal);
    this.inflight.set(key, { controller, settled: done.catch(() => undefined) });
    return done.finally(() => this.inflight.delete(key));
  }

  @OnJob(JOBS.sweepBroadcasts)
  sweep() {
    return this.sweeper.sweep();
  }

  private async dispatch(
    job: Job<DispatchJob>,
    token: string | undefined,
    signal: AbortSignal,
  ): Promise<unknown> {
    try {
      return await this.dispatcher.run(job.data.runId, signal);
    } catch (err) {
      if (signal.aborted) {
        // The worker is stopping: hand the run back to the queue without spending an attempt; the next
        // worker resumes it from the recorded recipients.
        await job.moveToWait(token);
        throw new WaitingError();
      }
      // On an outage the run stays `running` and the job fails: the outbox relay (or the sweep) pushes it
      // again and the run resumes. Any other failure on the last attempt ends the run.
      if (isFinalAttempt(job) && !isOutageFailure(err)) {
        await this.dispatcher.fail(job.data.runId, err);
        return { runId: job.data.runId, status: 'failed' };
      }
      throw err;
    }
  }

  /** A job that died outside the handler (stalled too often: the worker was killed) ends its run failed. */
  @OnWorkerEvent('failed')
  async onFailed(job: Job<DispatchJob> | undefined, err: Error): Promise<void> {
    if (!job || job.name !== JOBS.dispatchBroadcast.name) return;
    // Failed on an outage: left running for the relay or the sweep to push again.
    if (isOutageReason(err.message)) return;
    const state = await job.getState().catch(() => 'unknown');
    if (state !== 'failed') return;
    await this.dispatcher
      .fail(job.data.runId, err)
      .catch((failure: Error) =>
        this.logger.error(
          { run_id: job.data.runId, err: failure.message },
          'could not mark the broadcast failed',
        ),
      );
  }

  /**
   * A stopping worker would otherwise wait for a whole run: cancel in-flight sends so each run hands
   * itself back to the queue at once, and close the BullMQ worker in the same tick so it does not pick
   * the handed-back job up again.
   */
  override async onModuleDestroy(): Promise<void> {
    const running = [...this.inflight.values()];
    for (const { controller } of running) controller.abort();
    const closed = super.onModuleDestroy();
    await Promise.race([
      Promise.all([closed, ...running.map(({ settled }) => settled)]),
      new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref()),
    ]);
  }
}
