import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { QUEUES } from './queues.js';

/** While Redis is down every reconnect attempt is an error; one line per source per window is enough. */
const QUIET_MS = 30_000;

interface ErrorEmitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * BullMQ workers and queues emit 'error' on every failed reconnect while Redis is down, and without a
 * listener BullMQ prints each one to stderr as a raw stack trace (tens of kilobytes a minute, outside
 * the JSON logs). This turns them into one structured warning per source per 30 s.
 */
export function logQueueErrors(emitter: ErrorEmitter, logger: Logger, source: string): void {
  let last = 0;
  let suppressed = 0;
  emitter.on('error', (err: Error) => {
    const now = Date.now();
    if (now - last < QUIET_MS) {
      suppressed += 1;
      return;
    }
    logger.warn({ err: err.message, source, suppressed }, 'queue connection error');
    last = now;
    suppressed = 0;
  });
}

/** The same for the queues the worker modules register with BullModule.registerQueue. */
@Injectable()
export class RegisteredQueueErrors implements OnApplicationBootstrap {
  private readonly logger = new Logger('Queues');

  constructor(private readonly moduleRef: ModuleRef) {}

  onApplicationBootstrap(): void {
    for (const name of Object.values(QUEUES)) {
      let queue: Queue;
      try {
        queue = this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
      } catch {
        continue; // not registered in this process
      }
      logQueueErrors(queue, this.logger, `queue:${name}`);
    }
  }
}
