import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { afterOutage, nextOutagePush } from '../../infra/queue/job-failure.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import { BroadcastDispatcher } from './broadcast-dispatcher.js';
import { BroadcastsRepository } from './broadcasts.repository.js';
import { broadcastJobId } from './broadcasts.service.js';

/** BullMQ states in which a job will still run, or runs now. */
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

export interface SweepOutcome {
  /** Runs queued or running. */
  checked: number;
  /** Runs whose job was gone: enqueued again (the dispatcher resumes from the recorded recipients). */
  requeued: string[];
  /** Runs whose job has an open outbox entry: the relay pushes it, backs off and closes it, not the sweep. */
  leftToRelay: string[];
  /** Runs whose job failed on an outage and was pushed less than the backoff ago (nextOutagePush). */
  backingOff: string[];
  /**
   * Runs whose job had failed for good without ending the run, not on an outage or on one past
   * OUTAGE_RETRY_WINDOW_MS (afterOutage `given_up`): ended failed now.
   */
  failed: string[];
}

/**
 * A run in `queued` or `running` must have a live job, or it never finishes: Redis restarted empty (or a
 * job was removed by hand) leaves it `running` at 100 of 250 for good. The sweep (every minute, in the
 * worker) finds such runs and enqueues their job again under the same id; the dispatcher resumes where
 * the run stopped and resends a batch whose answer was lost under its key, so nobody is mailed twice.
 * A run whose job still has an open outbox entry is the relay's (it pushes lost jobs and jobs failed on an
 * outage, with its backoff, and closes the entry once the job finished): the sweep covers runs whose entry
 * is closed or gone, and pushes a job failed on an outage again only past the same backoff.
 */
@Injectable()
export class BroadcastSweeper {
  private readonly logger = new Logger(BroadcastSweeper.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly runs: BroadcastsRepository,
    private readonly queues: QueueService,
    private readonly outbox: OutboxService,
    private readonly dispatcher: BroadcastDispatcher,
  ) {}

  async sweep(): Promise<SweepOutcome> {
    const runs = await this.runs.openRuns(this.prisma);
    const queue = this.queues.queue(JOBS.dispatchBroadcast.queue);
    const outcome: SweepOutcome = {
      checked: runs.length,
      requeued: [],
      leftToRelay: [],
      backingOff: [],
      failed: [],
    };
    const open = await this.outbox.openJobIds(runs.map((run) => broadcastJobId(run.id)));
    for (const run of runs) {
      const jobId = broadcastJobId(run.id);
      if (open.has(jobId)) {
        outcome.leftToRelay.push(run.id);
        continue;
      }
      const job = await queue.getJob(jobId);
      const state = job ? await job.getState() : 'unknown';
      if (LIVE_STATES.has(state)) continue;
      // Failed on an outage (database, Redis or provider unavailable through every attempt): run it again
      // within the window, as the outbox relay does; the dispatcher resumes from the recorded recipients.
      const outage = state === 'failed' && afterOutage(job!, run.createdAt) === 'again';
      if (state === 'failed' && !outage) {
        // Its retries are used up and the failure handler could not end the run (database down then).
        await this.dispatcher.fail(run.id, new Error(job?.failedReason || 'dispatch job failed'));
        outcome.failed.push(run.id);
        continue;
      }
      // Pushed again on an outage only past the relay's backoff, counted in the job's own data.
      const data = outage ? nextOutagePush(job!) : { runId: run.id };
      if (!data) {
        outcome.backingOff.push(run.id);
        continue;
      }
      // Completed while the run is unfinished cannot be re-added under its id: start that job afresh.
      if (state === 'completed' || outage) await job!.remove();
      await this.queues.add(JOBS.dispatchBroadcast, data, { jobId });
      this.logger.warn({ run_id: run.id, job_state: state }, 'broadcast had no live job; enqueued again');
      outcome.requeued.push(run.id);
    }
    return outcome;
  }
}
