import { Processor } from '@nestjs/bullmq';
import { JobProcessor } from './job-processor.js';
import { JobRegistry } from './job-registry.js';
import { OutboxService } from './outbox.service.js';
import { JOBS, QUEUES } from './queues.js';
import { WORKER_OPTIONS } from './worker-options.js';

@Processor(QUEUES.maintenance, WORKER_OPTIONS)
export class MaintenanceProcessor extends JobProcessor {
  constructor(registry: JobRegistry, outbox: OutboxService) {
    super(registry);
    this.handle(JOBS.relayOutbox, () => outbox.relay());
  }
}
