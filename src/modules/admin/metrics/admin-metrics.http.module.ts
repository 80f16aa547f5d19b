import { Module } from '@nestjs/common';
import { AdminMetricsController } from './admin-metrics.controller.js';
import { AdminMetricsModule } from './admin-metrics.module.js';

@Module({ imports: [AdminMetricsModule], controllers: [AdminMetricsController] })
export class AdminMetricsHttpModule {}
