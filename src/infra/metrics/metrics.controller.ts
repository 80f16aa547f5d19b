import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../common/decorators/public.decorator.js';
import { MetricsService } from './metrics.service.js';

/** Worker only: /metrics on WORKER_PORT next to its /health (the worker serves nothing public). */
@ApiExcludeController()
@Public()
@Controller()
export class WorkerMetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get('metrics')
  async metricsEndpoint(@Res() res: Response): Promise<void> {
    const { contentType, body } = await this.metrics.render();
    res.type(contentType).send(body);
  }
}
