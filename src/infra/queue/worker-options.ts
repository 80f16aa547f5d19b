import type { WorkerOptions } from 'bullmq';
import type { AppConfig } from '../../config/app-config.js';

/**
 * Worker options of every processor: `@Processor(QUEUES.x, WORKER_OPTIONS)`. @nestjs/bullmq takes
 * worker options only from that static decorator argument and spreads them when the worker module
 * initialises, so WorkerModule.forRoot fills this one object from the configuration before that. One
 * configuration per process; a test process that builds several workers gets the last forRoot's values,
 * which is the worker it is building. JobProcessor refuses to boot a processor that does not pass it.
 */
export const WORKER_OPTIONS: Partial<WorkerOptions> = {};

export function configureWorkers(config: AppConfig): void {
  WORKER_OPTIONS.lockDuration = config.queue.lockDurationMs;
  WORKER_OPTIONS.stalledInterval = config.queue.stalledIntervalMs;
}
