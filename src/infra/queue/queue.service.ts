import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { createRedis } from '../redis/redis.service.js';
import { DEFAULT_JOB_OPTIONS, type JobDef, QUEUES, type QueueName } from './queues.js';

/**
 * Producer side of BullMQ for both processes. Adding a job fails within seconds while Redis is down, so
 * callers either surface a 503 or rely on the outbox relay.
 */
@Injectable()
export class QueueService implements OnModuleDestroy {
  private readonly queues = new Map<QueueName, Queue>();
  private connection: Redis | null = null;

  constructor(private readonly config: AppConfig) {}

  get prefix(): string {
    return this.config.redis.keyPrefix;
  }

  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      this.connection ??= createRedis(this.config, { commandTimeout: 5000 });
      this.connection.on('error', () => undefined);
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.prefix,
        defaultJobOptions: DEFAULT_JOB_OPTIONS,
        skipWaitingForReady: true,
      });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  async add<T extends object>(job: JobDef, data: T, options: JobsOptions = {}): Promise<string | undefined> {
    const added = await this.queue(job.queue).add(job.name, data, options);
    return added.id;
  }

  allQueueNames(): QueueName[] {
    return Object.values(QUEUES);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
    this.connection?.disconnect();
  }
}
