import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
import type { User } from '../../generated/prisma/client.js';
import { AdminOnly } from '../auth/admin.guard.js';
import { BroadcastsService } from './broadcasts.service.js';
import { BroadcastListDto, BroadcastResponseDto } from './dto/broadcast-response.dto.js';
import { CreateBroadcastDto } from './dto/create-broadcast.dto.js';
import { StrictPageQueryDto } from '../../common/paging/page-query.dto.js';
import { pageRequest } from '../../common/paging/paging.js';
import { ApiUuidParam } from '../../common/openapi/api-fields.js';

@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/broadcasts')
export class BroadcastsController {
  constructor(private readonly broadcasts: BroadcastsService) {}

  @ApiOperation({
    summary: 'Start a broadcast',
    description: 'Queues an e-mail run of a template to an audience; the dispatcher sends it in the worker.',
  })
  @Post()
  @ApiCreatedResponse({
    type: BroadcastResponseDto,
    description: 'The run, queued; the dispatcher is enqueued.',
  })
  @ApiErrors({
    400: {
      validation_failed: 'an invalid body, an unknown tier, an empty date range',
      unknown_template: 'no such e-mail template',
      template_needs_data:
        'a template that needs values of its own per recipient (payment_failed, low_balance, ...)',
    },
    409: { consent_required: 'a marketing template with bypass_consent true' },
  })
  create(@CurrentUser() admin: User, @Body() body: CreateBroadcastDto): Promise<BroadcastResponseDto> {
    return this.broadcasts.create(admin, body);
  }

  @ApiOperation({ summary: 'List broadcasts', description: 'Newest first.' })
  @Get()
  @ApiOkResponse({ type: BroadcastListDto, description: 'Newest first.' })
  list(@Query() query: StrictPageQueryDto): Promise<BroadcastListDto> {
    return this.broadcasts.list(pageRequest(query));
  }

  @ApiOperation({ summary: 'Get one broadcast' })
  @ApiUuidParam()
  @Get(':id')
  @ApiOkResponse({ type: BroadcastResponseDto })
  @ApiErrors({ 404: { not_found: 'no broadcast has this id' } })
  get(@Param('id') id: string): Promise<BroadcastResponseDto> {
    return this.broadcasts.get(id);
  }
}
