import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../common/decorators/public.decorator.js';
import { LivenessDto, ReadinessReportDto, StatusReportDto } from './dto/health.dto.js';
import { HealthService } from './health.service.js';

@ApiTags('operational')
@Public()
@Controller()
export class HealthController {
  constructor(private readonly health: HealthService) {}

  /** Liveness only: no database, store or external call. */
  @ApiOperation({ summary: 'Liveness', description: 'Liveness only: no database, store or external call.' })
  @Get('health')
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ type: LivenessDto, description: 'The process is up' })
  liveness(): LivenessDto {
    return this.health.liveness();
  }

  @ApiOperation({
    summary: 'Readiness',
    description: 'Database, Redis and the configured dependencies; 503 when a check fails.',
  })
  @Get('health/ready')
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ type: ReadinessReportDto, description: 'All checks passed' })
  @ApiServiceUnavailableResponse({
    type: ReadinessReportDto,
    description:
      'A check failed: the same report (not a problem document), its `message` the raw exception text',
  })
  async readiness(@Res({ passthrough: true }) res: Response): Promise<ReadinessReportDto> {
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
  @ApiOkResponse({
    type: StatusReportDto,
    description: 'Always 200: operational, degraded or down per component',
  })
  status(): Promise<StatusReportDto> {
    return this.health.status();
  }
}
