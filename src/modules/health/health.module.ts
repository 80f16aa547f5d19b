import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller.js';
import { HealthProbes } from './health.probes.js';
import { HealthService } from './health.service.js';

@Module({
  imports: [TerminusModule],
  controllers: [HealthController],
  providers: [HealthProbes, HealthService],
  exports: [HealthService],
})
export class HealthModule {}
