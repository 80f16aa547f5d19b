import { BullModule } from '@nestjs/bullmq';
import { Global, Module } from '@nestjs/common';
import { JobRegistry } from './job-registry.js';
import { JobRunRecorder } from './job-run.recorder.js';
import { MaintenanceProcessor } from './outbox.processor.js';
import { OutboxScheduler } from './outbox.scheduler.js';
import { RegisteredQueueErrors } from './queue-errors.js';
import { QUEUES } from './queues.js';

/** Worker-side job infrastructure: handler registry, run recorder, outbox relay. */
@Global()
@Module({
  imports: [BullModule.registerQueue({ name: QUEUES.maintenance })],
  providers: [JobRegistry, JobRunRecorder, MaintenanceProcessor, OutboxScheduler, RegisteredQueueErrors],
  exports: [JobRegistry, JobRunRecorder],
})
export class QueueInfraModule {}
