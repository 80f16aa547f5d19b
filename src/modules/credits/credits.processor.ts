import { Processor } from '@nestjs/bullmq';
import { JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JobRunRecorder } from '../../infra/queue/job-run.recorder.js';
import { OnJob } from '../../infra/queue/on-job.decorator.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../infra/queue/worker-options.js';
import { CreditsReconciler } from './credits.reconciler.js';

@Processor(QUEUES.credits, WORKER_OPTIONS)
export class CreditsProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    recorder: JobRunRecorder,
    private readonly reconciler: CreditsReconciler,
  ) {
    super(registry, recorder);
  }

  @OnJob(JOBS.reconcileCredits)
  reconcile() {
    return this.reconciler.run();
  }
}
