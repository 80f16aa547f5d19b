import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import type { AppConfig } from '../config/app-config.js';
import { ProblemDetailsFilter } from '../common/filters/problem-details.filter.js';
import { createValidationPipe } from '../common/validation/validation.pipe.js';
import { AdminMetricsHttpModule } from '../modules/admin/metrics/admin-metrics.http.module.js';
import { AuthModule } from '../modules/auth/auth.module.js';
import { HealthModule } from '../modules/health/health.module.js';
import { UsersModule } from '../modules/users/users.module.js';
import { CoreModule, type CoreOptions } from './core.module.js';

/** Feature modules that serve HTTP routes. Controllers live only here, processors only in the worker. */
export const API_FEATURE_MODULES = [UsersModule, AdminMetricsHttpModule];

@Module({})
export class ApiModule {
  static forRoot(config: AppConfig, options: CoreOptions = {}): DynamicModule {
    return {
      module: ApiModule,
      imports: [CoreModule.forRoot(config, options), AuthModule, HealthModule, ...API_FEATURE_MODULES],
      providers: [
        { provide: APP_FILTER, useClass: ProblemDetailsFilter },
        { provide: APP_PIPE, useFactory: createValidationPipe },
      ],
    };
  }
}
