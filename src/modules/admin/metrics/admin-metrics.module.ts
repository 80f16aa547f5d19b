import { Module } from '@nestjs/common';
import { AdminStatsRepository } from './admin-stats.repository.js';
import { AdminStatsService } from './admin-stats.service.js';
import { Clock, SystemClock } from './clock.js';
import { CreditMetricsRepository } from './credit-metrics.repository.js';
import { MailingMetricsRepository } from './mailing-metrics.repository.js';
import { MetricsOverviewService } from './metrics-overview.service.js';
import { QueueHealthService } from './queue-health.service.js';
import { RevenueMetricsRepository } from './revenue-metrics.repository.js';
import { UserMetricsRepository } from './user-metrics.repository.js';

@Module({
  providers: [
    { provide: Clock, useClass: SystemClock },
    MetricsOverviewService,
    AdminStatsService,
    QueueHealthService,
    RevenueMetricsRepository,
    MailingMetricsRepository,
    UserMetricsRepository,
    AdminStatsRepository,
    CreditMetricsRepository,
  ],
  exports: [Clock, MetricsOverviewService, AdminStatsService],
})
export class AdminMetricsModule {}
