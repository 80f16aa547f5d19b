import { Processor } from '@nestjs/bullmq';
import { JobProcessor } from './job-processor.js';
import { JobRegistry } from './job-registry.js';
import { OnJob } from './on-job.decorator.js';
import { OutboxService } from './outbox.service.js';
import { JOBS, QUEUES } from './queues.js';
import { WORKER_OPTIONS } from './worker-options.js';

@Processor(QUEUES.maintenance, WORKER_OPTIONS)
export class MaintenanceProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    private readonly outbox: OutboxService,
  ) {
    super(registry);
  }

  @OnJob(JOBS.relayOutbox)
  relayOutbox() {
    return this.outbox.relay();
  }
}
