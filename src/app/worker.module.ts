import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AppConfig } from '../config/app-config.js';
import { WorkerMetricsController } from '../infra/metrics/metrics.controller.js';
import { QueueInfraModule } from '../infra/queue/queue-infra.module.js';
import { configureWorkers } from '../infra/queue/worker-options.js';
import { reconnectDelay } from '../infra/redis/redis.service.js';
import { BillingWorkerModule } from '../modules/billing/billing.worker.module.js';
import { CreditsWorkerModule } from '../modules/credits/credits.worker.module.js';
import { EmailWorkerModule } from '../modules/email/email.worker.module.js';
import { BroadcastsWorkerModule } from '../modules/broadcasts/broadcasts.worker.module.js';
import { HealthModule } from '../modules/health/health.module.js';
import { UsersWorkerModule } from '../modules/users/users.worker.module.js';
import { WebhooksWorkerModule } from '../modules/webhooks/webhooks.worker.module.js';
import { CoreModule, type CoreOptions } from './core.module.js';

/** Feature modules with BullMQ processors and cron schedulers (no API routes in this process). */
export const WORKER_FEATURE_MODULES = [
  UsersWorkerModule,
  EmailWorkerModule,
  BillingWorkerModule,
  CreditsWorkerModule,
  BroadcastsWorkerModule,
  WebhooksWorkerModule,
];

export interface WorkerOptions extends CoreOptions {
  /** Tests drive processors directly and do not want cron ticks. */
  schedule?: boolean;
}

@Module({})
export class WorkerModule {
  static forRoot(config: AppConfig, options: WorkerOptions = {}): DynamicModule {
    configureWorkers(config);
    return {
      module: WorkerModule,
      imports: [
        CoreModule.forRoot(config, options),
        BullModule.forRoot({
          // BullMQ hands the URL to ioredis: rediss:// gets TLS with certificate verification.
          connection: { url: config.redis.url, maxRetriesPerRequest: null, retryStrategy: reconnectDelay },
          prefix: config.redis.keyPrefix,
        }),
        ...(options.schedule === false ? [] : [ScheduleModule.forRoot()]),
        QueueInfraModule,
        HealthModule,
        ...WORKER_FEATURE_MODULES,
      ],
      controllers: [WorkerMetricsController],
    };
  }
}
