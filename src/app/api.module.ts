import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import type { AppConfig } from '../config/app-config.js';
import { ProblemDetailsFilter } from '../common/filters/problem-details.filter.js';
import { createValidationPipe } from '../common/validation/validation.pipe.js';
import { MetricsServer } from '../infra/metrics/metrics.server.js';
import { AdminMetricsHttpModule } from '../modules/admin/metrics/admin-metrics.http.module.js';
import { AdminDirectoryModule } from '../modules/admin/directory/admin-directory.module.js';
import { AdminWebhooksModule } from '../modules/admin/webhooks/admin-webhooks.module.js';
import { QueueDashboardModule } from '../modules/admin/queue-dashboard/queue-dashboard.module.js';
import { AiHttpModule } from '../modules/ai/ai.http.module.js';
import { ApiKeysHttpModule } from '../modules/api-keys/api-keys.http.module.js';
import { AuthModule } from '../modules/auth/auth.module.js';
import { BillingHttpModule } from '../modules/billing/billing.http.module.js';
import { CreditsHttpModule } from '../modules/credits/credits.http.module.js';
import { FeedbackHttpModule } from '../modules/feedback/feedback.http.module.js';
import { BroadcastsHttpModule } from '../modules/broadcasts/broadcasts.http.module.js';
import { EmailHttpModule } from '../modules/email/email.http.module.js';
import { HealthModule } from '../modules/health/health.module.js';
import { SavedSearchesHttpModule } from '../modules/saved-searches/saved-searches.http.module.js';
import { UsersHttpModule } from '../modules/users/users.http.module.js';
import { WorkspacesHttpModule } from '../modules/workspaces/workspaces.http.module.js';
import { CoreModule, type CoreOptions } from './core.module.js';

/** Feature modules that serve HTTP routes. Controllers live only here, processors only in the worker. */
export const API_FEATURE_MODULES = [
  UsersHttpModule,
  FeedbackHttpModule,
  AdminDirectoryModule,
  AdminWebhooksModule,
  SavedSearchesHttpModule,
  WorkspacesHttpModule,
  ApiKeysHttpModule,
  BillingHttpModule,
  CreditsHttpModule,
  AiHttpModule,
  EmailHttpModule,
  BroadcastsHttpModule,
  AdminMetricsHttpModule,
  QueueDashboardModule,
];

@Module({})
export class ApiModule {
  static forRoot(config: AppConfig, options: CoreOptions = {}): DynamicModule {
    return {
      module: ApiModule,
      imports: [CoreModule.forRoot(config, options), AuthModule, HealthModule, ...API_FEATURE_MODULES],
      providers: [
        { provide: APP_FILTER, useClass: ProblemDetailsFilter },
        { provide: APP_PIPE, useFactory: createValidationPipe },
        MetricsServer,
      ],
    };
  }
}
