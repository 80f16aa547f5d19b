import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../common/decorators/public.decorator.js';
import { HealthService, type ReadinessReport, type StatusReport } from './health.service.js';

@ApiTags('operational')
@Public()
@Controller()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  /** Liveness only: no database, store or external call. */
  @ApiOperation({ summary: 'Liveness', description: 'Liveness only: no database, store or external call.' })
  @Get('health')
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ description: '{status, project_slug, environment}' })
  liveness() {
    return this.health.liveness();
  }

  @ApiOperation({
    summary: 'Readiness',
    description: 'Database, Redis and the configured dependencies; 503 when a check fails.',
  })
  @Get('health/ready')
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ description: 'All checks passed' })
  @ApiServiceUnavailableResponse({ description: 'A check failed; messages carry the raw exception text' })
  async readiness(@Res({ passthrough: true }) res: Response): Promise<ReadinessReport> {
    const report = await this.health.readiness();
    res.status(report.ok ? 200 : 503);
    return report;
  }

  @ApiOperation({
    summary: 'Component status',
    description: 'Always 200: operational, degraded or down per component.',
  })
  @Get('status')
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ description: 'Always 200: operational, degraded or down per component' })
  status(): Promise<StatusReport> {
    return this.health.status();
  }
}
