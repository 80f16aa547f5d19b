import { Controller, Get, Header } from '@nestjs/common';
import { ApiBearerAuth, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../../auth/admin.guard.js';
import { AdminStatsService } from './admin-stats.service.js';
import {
  AdminStatsDto,
  QueueCountsDto,
  TableCountDto,
  WebhookStatusCountsDto,
} from './dto/admin-stats.dto.js';
import {
  LeadMagnetEntryDto,
  MetricsOverviewDto,
  MoneyTotalDto,
  MrrCurrencyDto,
  MrrTierDto,
} from './dto/metrics-overview.dto.js';
import { MetricsOverviewService } from './metrics-overview.service.js';

@ApiTags('admin')
@ApiBearerAuth()
@ApiExtraModels(
  MrrCurrencyDto,
  MrrTierDto,
  MoneyTotalDto,
  LeadMagnetEntryDto,
  TableCountDto,
  QueueCountsDto,
  WebhookStatusCountsDto,
)
@AdminOnly()
@Controller('admin')
export class AdminMetricsController {
  constructor(
    private readonly overviewService: MetricsOverviewService,
    private readonly statsService: AdminStatsService,
  ) {}

  @Get('metrics/overview')
  // A dashboard refresh storm hits the browser cache, never a shared one; Vary keeps one admin's cached
  // answer from being replayed under another Authorization header, and keeps the CORS middleware's
  // Origin (this header replaces the whole Vary value).
  @Header('Cache-Control', 'private, max-age=60')
  @Header('Vary', 'Origin, Authorization')
  @ApiOperation({ summary: 'Every dashboard number, computed against one instant (generated_at)' })
  @ApiOkResponse({ type: MetricsOverviewDto })
  overview(): Promise<MetricsOverviewDto> {
    return this.overviewService.overview();
  }

  @Get('stats')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Table counts and job health: queues, scheduled jobs, webhook archive, outbox' })
  @ApiOkResponse({ type: AdminStatsDto })
  stats(): Promise<AdminStatsDto> {
    return this.statsService.stats();
  }
}
