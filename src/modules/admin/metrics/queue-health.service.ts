import { Injectable } from '@nestjs/common';
import type { JobType } from 'bullmq';
import { QueueService } from '../../../infra/queue/queue.service.js';
import { RedisService } from '../../../infra/redis/redis.service.js';
import type { QueueCountsDto, QueuesDto } from './dto/admin-stats.dto.js';
import { DAY_MS } from './metric-windows.js';

const JOB_STATES: JobType[] = [
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
  'failed',
  'completed',
];

/** Redis answers in milliseconds when up; past this the stats report the queues as unavailable. */
export const QUEUE_HEALTH_TIMEOUT_MS = 2500;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Depth of every queue in QUEUES and the jobs that failed for good in the last 24 h. Never throws: with
 * Redis down the admin still gets the database half of the stats.
 */
@Injectable()
export class QueueHealthService {
  constructor(
    private readonly queues: QueueService,
    private readonly redis: RedisService,
  ) {}

  async report(now: Date): Promise<QueuesDto> {
    try {
      const byName = await withTimeout(this.collect(now), QUEUE_HEALTH_TIMEOUT_MS);
      const failed24h = Object.values(byName).reduce((sum, q) => sum + q.failed_last_24h, 0);
      return { available: true, error: null, failed_last_24h: failed24h, by_name: byName };
    } catch (err) {
      return {
        available: false,
        error: (err as Error).message.slice(0, 200),
        failed_last_24h: null,
        by_name: null,
      };
    }
  }

  private async collect(now: Date): Promise<Record<string, QueueCountsDto>> {
    const since = now.getTime() - DAY_MS;
    const entries = await Promise.all(
      this.queues.allQueueNames().map(async (name) => {
        const queue = this.queues.queue(name);
        const [counts, paused, failed24h] = await Promise.all([
          queue.getJobCounts(...JOB_STATES),
          queue.isPaused(),
          // The failed set is scored by finishedOn: a range count, without loading any job.
          this.redis.client.zcount(queue.toKey('failed'), `(${since}`, '+inf'),
        ]);
        const n = (state: JobType) => counts[state] ?? 0;
        const row: QueueCountsDto = {
          waiting: n('waiting'),
          active: n('active'),
          delayed: n('delayed'),
          prioritized: n('prioritized'),
          waiting_children: n('waiting-children'),
          paused,
          failed: n('failed'),
          completed: n('completed'),
          failed_last_24h: failed24h,
        };
        return [name, row] as const;
      }),
    );
    return Object.fromEntries(entries);
  }
}
