import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AppConfig } from '../../config/app-config.js';
import { PrismaService } from '../prisma/prisma.service.js';
import { QueueService } from '../queue/queue.service.js';

/**
 * Prometheus metrics of one process. A registry per application instance (not prom-client's global one),
 * so several apps in one test process do not collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method and route template',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly webhookEvents = new Counter({
    name: 'webhook_events_total',
    help: 'Webhooks by provider and outcome: accepted, duplicate (API); processed, skipped, failed, reapplied (worker)',
    labelNames: ['provider', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookRefusals = new Counter({
    name: 'webhook_refusals_total',
    help: 'Inbound webhook deliveries refused before processing, by provider and reason',
    labelNames: ['provider', 'reason'] as const,
    registers: [this.registry],
  });

  readonly duplicateSubscriptions = new Counter({
    name: 'billing_duplicate_subscriptions_total',
    help: 'Second live subscriptions of one user that arrived anyway (an operator should refund one)',
    registers: [this.registry],
  });

  readonly billingDriftFailures = new Counter({
    name: 'billing_drift_failures_total',
    help: 'Subscriptions the hourly drift check could not reconcile (the run went on with the others), by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly credits = new Counter({
    name: 'credits_total',
    help: 'Credits moved through the ledger, by kind (grant, spend, refund, ...)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly emails = new Counter({
    name: 'emails_total',
    help: 'E-mails by kind and outcome (sent, failed, skipped)',
    labelNames: ['kind', 'status'] as const,
    registers: [this.registry],
  });

  readonly outboxOutageRetries = new Counter({
    name: 'outbox_outage_retries_total',
    help: 'Outbox jobs whose last attempt failed on an outage, by job and outcome: pushed (again) or abandoned (older than the retry window)',
    labelNames: ['job_name', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly scheduledTicksCaughtUp = new Counter({
    name: 'scheduled_ticks_caught_up_total',
    help: 'Scheduled ticks enqueued late by the catch-up (Redis unreachable or no worker running at the tick), by job',
    labelNames: ['job_name'] as const,
    registers: [this.registry],
  });

  readonly emailDeliveryEvents = new Counter({
    name: 'email_delivery_events_total',
    help: 'Delivery webhooks applied, by event (bounced_permanent, bounced_transient, complained, delivered, delivery_delayed)',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });

  readonly emailSuppressions = new Counter({
    name: 'email_suppressions_total',
    help: 'Addresses added to the suppression list, by reason (bounce, complaint, manual)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly emailUnsuppressions = new Counter({
    name: 'email_unsuppressions_total',
    help: 'Addresses an operator took off the suppression list',
    registers: [this.registry],
  });

  readonly emailSuppressedSkips = new Counter({
    name: 'email_suppressed_skips_total',
    help: 'Messages not sent because the address is suppressed, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  constructor(config: AppConfig, queues: QueueService, prisma: PrismaService) {
    this.registry.setDefaultLabels({ service: config.project.projectSlug });
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'queue_jobs',
      help: 'BullMQ jobs by queue and state (read from Redis at scrape time)',
      labelNames: ['queue', 'state'] as const,
      registers: [this.registry],
      async collect() {
        for (const name of queues.allQueueNames()) {
          try {
            const counts = await queues
              .queue(name)
              .getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed');
            for (const [state, value] of Object.entries(counts)) this.set({ queue: name, state }, value);
          } catch {
            // Redis is down: the scrape still answers; queue_jobs is simply absent this time.
          }
        }
      },
    });
    // Redis runs with noeviction (BullMQ): full, it refuses job pushes. Completed jobs are kept 24 h.
    const redisMemory = (kind: 'used' | 'max') =>
      async function (this: Gauge) {
        try {
          this.set((await queues.redisMemory())[kind]);
        } catch {
          // Redis is down: the scrape still answers, with the last reading (readiness reports the outage).
        }
      };
    new Gauge({
      name: 'redis_memory_used_bytes',
      help: 'Memory Redis uses (INFO used_memory, read at scrape time): queues, job results kept 24 h, rate limits',
      registers: [this.registry],
      collect: redisMemory('used'),
    });
    new Gauge({
      name: 'redis_memory_max_bytes',
      help: "Redis's maxmemory (INFO maxmemory, read at scrape time); 0 when it has no limit",
      registers: [this.registry],
      collect: redisMemory('max'),
    });
    new Gauge({
      name: 'webhook_events_pending',
      help: 'Archived webhook events by provider that wait for the worker (RECEIVED) or failed for good (FAILED, replayable)',
      labelNames: ['provider', 'status'] as const,
      registers: [this.registry],
      async collect() {
        try {
          const rows = await prisma.$queryRaw<{ provider: string; status: string; n: number }[]>`
            SELECT provider, status::text AS status, count(*)::int AS n FROM webhook_events
            WHERE status IN ('RECEIVED', 'FAILED') GROUP BY 1, 2`;
          this.reset();
          for (const row of rows) this.set({ provider: row.provider, status: row.status }, row.n);
        } catch {
          // The database is down: the scrape still answers without this gauge.
        }
      },
    });
    new Gauge({
      name: 'billing_backfill_seconds_since_run',
      help: 'Seconds since the billing backfill last finished a run (absent before its first run)',
      registers: [this.registry],
      async collect() {
        try {
          const [row] = await prisma.$queryRaw<{ last_run_at: Date | null }[]>`
            SELECT last_run_at FROM sync_checkpoints WHERE name = 'billing-backfill'`;
          if (row?.last_run_at) this.set((Date.now() - row.last_run_at.getTime()) / 1000);
        } catch {
          // The database is down: the scrape still answers without this gauge.
        }
      },
    });
    new Gauge({
      name: 'outbox_pending',
      help: 'Outbox jobs committed but not yet pushed to Redis (the relay pushes them when Redis answers)',
      registers: [this.registry],
      async collect() {
        try {
          const [row] = await prisma.$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM outbox WHERE dispatched_at IS NULL`;
          this.set(row?.n ?? 0);
        } catch {
          // The database is down: the scrape still answers without this gauge.
        }
      },
    });
    new Gauge({
      name: 'outbox_oldest_pending_seconds',
      help: 'Age of the oldest outbox job not yet pushed to Redis (0 when none is pending)',
      registers: [this.registry],
      async collect() {
        try {
          const [row] = await prisma.$queryRaw<{ oldest: Date | null }[]>`
            SELECT min(created_at) AS oldest FROM outbox WHERE dispatched_at IS NULL`;
          this.set(row?.oldest ? (Date.now() - row.oldest.getTime()) / 1000 : 0);
        } catch {
          // The database is down: the scrape still answers without this gauge.
        }
      },
    });
    // prom-client collects the gauges of one scrape concurrently: each reads its own rows.
    const jobRuns = () =>
      prisma.$queryRaw<{ name: string; last_finished_at: Date | null; last_status: string | null }[]>`
        SELECT name, last_finished_at, last_status FROM job_runs`;
    new Gauge({
      name: 'scheduled_job_seconds_since_finished',
      help: 'Seconds since each scheduled job last finished a run, successful or not (job_runs)',
      labelNames: ['job_name'] as const,
      registers: [this.registry],
      async collect() {
        try {
          const rows = await jobRuns();
          this.reset();
          for (const row of rows)
            if (row.last_finished_at)
              this.set({ job_name: row.name }, (Date.now() - row.last_finished_at.getTime()) / 1000);
        } catch {
          // The database is down: the scrape still answers without this gauge.
        }
      },
    });
    new Gauge({
      name: 'scheduled_job_last_run_failed',
      help: '1 when the last finished run of a scheduled job failed (job_runs.last_error says why), else 0',
      labelNames: ['job_name'] as const,
      registers: [this.registry],
      async collect() {
        try {
          const rows = await jobRuns();
          this.reset();
          for (const row of rows)
            if (row.last_finished_at) this.set({ job_name: row.name }, row.last_status === 'failed' ? 1 : 0);
        } catch {
          // The database is down: the scrape still answers without this gauge.
        }
      },
    });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
