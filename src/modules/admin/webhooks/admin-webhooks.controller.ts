import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../../../common/openapi/api-errors.decorator.js';
import { CurrentUser } from '../../../common/decorators/current-user.decorator.js';
import type { User } from '../../../generated/prisma/client.js';
import { AdminOnly } from '../../auth/admin.guard.js';
import { AdminWebhooksService } from './admin-webhooks.service.js';
import {
  BulkReplayDto,
  BulkReplayResultDto,
  ListWebhooksQueryDto,
  ReplayResultDto,
  WebhookDetailDto,
  WebhookListDto,
} from './dto/admin-webhooks.dto.js';
import { ApiUuidParam } from '../../../common/openapi/api-fields.js';

@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/webhooks')
export class AdminWebhooksController {
  constructor(private readonly webhooks: AdminWebhooksService) {}

  /** Archived webhook deliveries of every provider, newest first. */
  @ApiOperation({
    summary: 'List archived webhook events',
    description: 'Archived webhook deliveries of every provider, newest first.',
  })
  @Get()
  @ApiOkResponse({ type: WebhookListDto })
  @ApiErrors({
    400: { validation_failed: 'an unknown or invalid filter, page_size out of range, or from after to' },
  })
  list(@Query() query: ListWebhooksQueryDto): Promise<WebhookListDto> {
    return this.webhooks.list(query);
  }

  /** One archived delivery with its payload. */
  @ApiOperation({
    summary: 'Get one archived webhook event',
    description: 'One archived delivery with its payload.',
  })
  @ApiUuidParam()
  @Get(':id')
  @ApiOkResponse({ type: WebhookDetailDto })
  @ApiErrors({ 404: { not_found: 'no archived event has this id' } })
  get(@Param('id') id: string): Promise<WebhookDetailDto> {
    return this.webhooks.get(id);
  }

  /** Runs a FAILED or SKIPPED event again through its handler, now; exactly once. Audit webhook.replayed. */
  @ApiOperation({
    summary: 'Replay one webhook event',
    description:
      'Runs a FAILED or SKIPPED event again through its handler, now; exactly once. Audited as webhook.replayed.',
  })
  @ApiUuidParam()
  @Post(':id/replay')
  @HttpCode(200)
  @ApiOkResponse({ type: ReplayResultDto })
  @ApiErrors({
    404: { not_found: 'no archived event has this id' },
    409: {
      already_processed: 'the event was processed',
      still_processing: 'the worker still holds it (RECEIVED)',
    },
  })
  replay(@Param('id') id: string, @CurrentUser() admin: User): Promise<ReplayResultDto> {
    return this.webhooks.replay(id, admin);
  }

  /** Queues every matching FAILED (or SKIPPED) event for the worker; progress shows as RECEIVED rows. */
  @ApiOperation({
    summary: 'Replay webhook events in bulk',
    description:
      'Queues every matching FAILED (or SKIPPED) event for the worker; progress shows as RECEIVED rows.',
  })
  @Post('replay')
  @HttpCode(202)
  @ApiAcceptedResponse({ type: BulkReplayResultDto })
  @ApiErrors({ 400: { validation_failed: 'an invalid body (status FAILED or SKIPPED), or from after to' } })
  replayMany(@Body() body: BulkReplayDto, @CurrentUser() admin: User): Promise<BulkReplayResultDto> {
    return this.webhooks.replayMany(body, admin);
  }
}
