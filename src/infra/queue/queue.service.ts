import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { createRedis } from '../redis/redis.service.js';
import { withTraceContext } from '../tracing/spans.js';
import { DEFAULT_JOB_OPTIONS, type JobDef, QUEUES, type QueueName } from './queues.js';

/**
 * Producer side of BullMQ for both processes. Adding a job fails within seconds while Redis is down, so
 * callers either surface a 503 or rely on the outbox relay.
 */
@Injectable()
export class QueueService implements OnModuleDestroy {
  private readonly queues = new Map<QueueName, { queue: Queue; broken: boolean }>();
  private connection: Redis | null = null;
  private readonly reconnectListeners: (() => void)[] = [];

  constructor(private readonly config: AppConfig) {}

  get prefix(): string {
    return this.config.redis.keyPrefix;
  }

  queue(name: QueueName): Queue {
    const current = this.queues.get(name);
    if (current && !current.broken) return current.queue;
    // Closing never touches the shared connection (BullMQ leaves a passed-in client alone).
    if (current) void current.queue.close().catch(() => undefined);
    const queue = new Queue(name, {
      connection: this.client(),
      prefix: this.prefix,
      defaultJobOptions: DEFAULT_JOB_OPTIONS,
      skipWaitingForReady: true,
    });
    queue.on('error', () => undefined);
    const entry = { queue, broken: false };
    // BullMQ asks Redis for its version once, when a queue is created, and a queue created while Redis
    // is down fails every later call, even after Redis is back. Queues are created on first use, so such
    // a queue is replaced on its next use instead of breaking its jobs until a restart.
    queue.waitUntilReady().catch(() => (entry.broken = true));
    this.queues.set(name, entry);
    return queue;
  }

  /**
   * Redis's memory as INFO reports it: bytes in use, and its maxmemory (0 when it has no limit). Completed
   * jobs are kept 24 h (SPEC), so a busy day of webhooks grows it (docs/operations.md, "Redis sizing").
   */
  async redisMemory(): Promise<{ used: number; max: number }> {
    const info = await this.client().info('memory');
    const field = (name: string): number => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1]);
    return { used: field('used_memory'), max: field('maxmemory') };
  }

  /**
   * Calls `listener` each time the queues' connection is ready again after it was lost or could not be made
   * (Redis back from an outage or a restart); not at a first connect that succeeded.
   */
  onReconnect(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  /** The one connection the queues share (created on first use). */
  private client(): Redis {
    if (!this.connection) {
      const connection = createRedis(this.config, { commandTimeout: 5000 });
      connection.on('error', () => undefined);
      // 'close' also follows a first connect that failed: Redis was down when the connection was made.
      let lost = false;
      connection.on('close', () => (lost = true));
      connection.on('ready', () => {
        if (!lost) return;
        lost = false;
        for (const listener of this.reconnectListeners) listener();
      });
      this.connection = connection;
    }
    return this.connection;
  }

  async add<T extends object>(job: JobDef, data: T, options: JobsOptions = {}): Promise<string | undefined> {
    // The job continues the trace of whatever enqueued it (a request, another job) when tracing is on.
    const added = await this.queue(job.queue).add(job.name, data, withTraceContext(options));
    return added.id;
  }

  /**
   * Several jobs of one kind in one round trip to Redis (BullMQ's addBulk); the same job ids dedupe as add's.
   * Each item's options carry its own trace (`withTraceContext`, taken in the context it was enqueued in):
   * a push shared by several callers runs in one of theirs, which must not become the others' trace.
   */
  async addMany<T extends object>(job: JobDef, items: { data: T; options?: JobsOptions }[]): Promise<void> {
    if (items.length === 0) return;
    await this.queue(job.queue).addBulk(
      items.map((item) => ({ name: job.name, data: item.data, opts: item.options ?? {} })),
    );
  }

  allQueueNames(): QueueName[] {
    return Object.values(QUEUES);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.allSettled([...this.queues.values()].map(({ queue }) => queue.close()));
    this.connection?.disconnect();
  }
}
