import { type DynamicModule, Global, Module } from '@nestjs/common';
import { Logger, LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { AppConfig } from '../config/app-config.js';
import { AppLogger } from '../common/logging/app-logger.js';
import { loggerOptions } from '../common/logging/logger.options.js';
import { HttpClient } from '../infra/http/http-client.js';
import { MetricsService } from '../infra/metrics/metrics.service.js';
import { PrismaModule } from '../infra/prisma/prisma.module.js';
import { OutboxService } from '../infra/queue/outbox.service.js';
import { QueueService } from '../infra/queue/queue.service.js';
import { RedisModule } from '../infra/redis/redis.module.js';
import { AuditModule } from '../modules/audit/audit.module.js';

export interface CoreOptions {
  /** Extra log destination (tests scan what the service logged). */
  logStream?: DestinationStream;
}

/** What both processes share: configuration, logging, PostgreSQL, Redis, queues, audit. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, options: CoreOptions = {}): DynamicModule {
    return {
      module: CoreModule,
      imports: [
        LoggerModule.forRoot(loggerOptions(config, options.logStream)),
        PrismaModule,
        RedisModule,
        AuditModule,
      ],
      providers: [
        { provide: AppConfig, useValue: config },
        QueueService,
        OutboxService,
        HttpClient,
        MetricsService,
        { provide: AppLogger, useFactory: (logger: Logger) => new AppLogger(logger), inject: [Logger] },
      ],
      exports: [AppConfig, QueueService, OutboxService, HttpClient, MetricsService, AppLogger],
    };
  }
}
