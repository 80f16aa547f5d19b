import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { afterOutage } from '../../infra/queue/job-failure.js';
import { QueueService } from '../../infra/queue/queue.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import { BroadcastDispatcher } from './broadcast-dispatcher.js';
import { broadcastJobId } from './broadcasts.service.js';

/** BullMQ states in which a job will still run, or runs now. */
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

export interface SweepOutcome {
  /** Runs queued or running. */
  checked: number;
  /** Runs whose job was gone: enqueued again (the dispatcher resumes from the recorded recipients). */
  requeued: string[];
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
 * The outbox relay re-pushes lost jobs as well; this also covers runs whose outbox entry is gone.
 */
@Injectable()
export class BroadcastSweeper {
  private readonly logger = new Logger(BroadcastSweeper.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly queues: QueueService,
    private readonly dispatcher: BroadcastDispatcher,
  ) {}

  async sweep(): Promise<SweepOutcome> {
    const runs = await this.prisma.broadcastRun.findMany({
      where: { status: { in: ['queued', 'running'] } },
      select: { id: true, createdAt: true },
      orderBy: { createdAt: 'asc' },
    });
    const queue = this.queues.queue(JOBS.dispatchBroadcast.queue);
    const outcome: SweepOutcome = { checked: runs.length, requeued: [], failed: [] };
    for (const run of runs) {
      const jobId = broadcastJobId(run.id);
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
      // Completed while the run is unfinished cannot be re-added under its id: start that job afresh.
      if (state === 'completed' || outage) await job!.remove();
      await this.queues.add(JOBS.dispatchBroadcast, { runId: run.id }, { jobId });
      this.logger.warn({ run_id: run.id, job_state: state }, 'broadcast had no live job; enqueued again');
      outcome.requeued.push(run.id);
    }
    return outcome;
  }
}
