import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { type CheckResult, HealthProbes } from './health.probes.js';

export type ComponentStatus = 'operational' | 'degraded' | 'down';

export interface ReadinessReport {
  ok: boolean;
  checked_at: string;
  checks: CheckResult[];
}

export interface StatusReport {
  project: string;
  checked_at: string;
  overall: ComponentStatus;
  components: { name: string; status: ComponentStatus }[];
}

@Injectable()
export class HealthService {
  constructor(
    private readonly probes: HealthProbes,
    private readonly config: AppConfig,
  ) {}

  liveness() {
    return { status: 'ok', project_slug: this.config.project.projectSlug, environment: this.config.env };
  }

  async readiness(): Promise<ReadinessReport> {
    const checks = await this.probes.runAll();
    return { ok: checks.every((c) => c.ok), checked_at: new Date().toISOString(), checks };
  }

  /** Public status page: no exception text, only operational / degraded / down per component. */
  async status(): Promise<StatusReport> {
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
