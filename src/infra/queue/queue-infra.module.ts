import { BullModule } from '@nestjs/bullmq';
import { Global, Module } from '@nestjs/common';
import { JobRegistry } from './job-registry.js';
import { JobRunRecorder } from './job-run.recorder.js';
import { MaintenanceProcessor } from './outbox.processor.js';
import { JobScheduler } from './job-scheduler.js';
import { RegisteredQueueErrors } from './queue-errors.js';
import { QUEUES } from './queues.js';

/** Worker-side job infrastructure: handler registry, run recorder, the scheduler, outbox relay. */
@Global()
@Module({
  imports: [BullModule.registerQueue({ name: QUEUES.maintenance })],
  providers: [JobRegistry, JobRunRecorder, MaintenanceProcessor, JobScheduler, RegisteredQueueErrors],
  exports: [JobRegistry, JobRunRecorder, JobScheduler],
})
export class QueueInfraModule {}
