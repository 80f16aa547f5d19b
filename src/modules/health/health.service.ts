import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import type { LivenessDto, ReadinessReportDto, StatusReportDto } from './dto/health.dto.js';
import { type CheckResult, HealthProbes } from './health.probes.js';

export type ComponentStatus = StatusReportDto['overall'];

@Injectable()
export class HealthService {
  constructor(
    private readonly probes: HealthProbes,
    private readonly config: AppConfig,
  ) {}

  liveness(): LivenessDto {
    return { status: 'ok', project_slug: this.config.project.projectSlug, environment: this.config.env };
  }

  async readiness(): Promise<ReadinessReportDto> {
    const checks = await this.probes.runAll();
    return { ok: checks.every((c) => c.ok), checked_at: new Date().toISOString(), checks };
  }

  /** Public status page: no exception text, only operational / degraded / down per component. */
  async status(): Promise<StatusReportDto> {
    const checks = await this.probes.runAll();
    const components = checks.map((check) => ({ name: check.name, status: this.componentStatus(check) }));
    const overall: ComponentStatus = components.some((c) => c.status === 'down')
      ? 'down'
      : components.some((c) => c.status === 'degraded')
        ? 'degraded'
        : 'operational';
    return {
      project: this.config.project.projectSlug,
      checked_at: new Date().toISOString(),
      overall,
      components,
    };
  }

  private componentStatus(check: CheckResult): ComponentStatus {
    if (!check.ok) return 'down';
    return check.latency_ms > this.config.health.degradedMs[check.name] ? 'degraded' : 'operational';
  }
}
