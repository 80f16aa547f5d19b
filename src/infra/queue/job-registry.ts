import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { JOBS } from './queues.js';

/**
 * Processors register the job names they handle; at bootstrap the worker refuses to start when a job in
 * JOBS has no handler.
 */
@Injectable()
export class JobRegistry implements OnApplicationBootstrap {
  private readonly handled = new Set<string>();

  register(queue: string, names: string[]): void {
    for (const name of names) this.handled.add(`${queue}/${name}`);
  }

  missing(): string[] {
    return Object.values(JOBS)
      .map((job) => `${job.queue}/${job.name}`)
      .filter((key) => !this.handled.has(key));
  }

  onApplicationBootstrap(): void {
    const missing = this.missing();
    if (missing.length > 0) throw new Error(`jobs without a handler: ${missing.join(', ')}`);
  }
}
