import { Body, Controller, Get, Headers, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
import {
  ApiIdempotencyKey,
  IDEMPOTENT_REPLAYED_RESPONSE_HEADER,
} from '../../common/idempotency/api-idempotency-key.decorator.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
} from '../../common/idempotency/idempotency-key.js';
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
    description:
      'Queues an e-mail run of a template to an audience; the dispatcher sends it in the worker. Send an `Idempotency-Key` to retry safely: without one every call queues another run.',
  })
  @Post()
  @ApiIdempotencyKey(
    'Makes retries safe: the same key and body (compared normalised) create one run, and every retry is answered with the 201 that created it (`Idempotent-Replayed: true`); no second run, audit entry or dispatch. Keys are per admin and never expire (a new broadcast needs a new key). 1 to 128 of `A-Z a-z 0-9 . _ ~ : -`; a UUID per admin action is a good key.',
  )
  @ApiCreatedResponse({
    type: BroadcastResponseDto,
    description:
      'The run, queued; the dispatcher is enqueued. A retry with the same Idempotency-Key gets the same answer again (the run as created; GET it for its progress).',
    headers: IDEMPOTENT_REPLAYED_RESPONSE_HEADER,
  })
  @ApiErrors({
    400: {
      validation_failed: 'an invalid body, an unknown tier, an empty date range',
      unknown_template: 'no such e-mail template',
      template_needs_data:
        'a template that needs values of its own per recipient (payment_failed, low_balance, ...)',
      invalid_idempotency_key: 'the Idempotency-Key is not 1 to 128 of `A-Z a-z 0-9 . _ ~ : -`',
    },
    409: { consent_required: 'a marketing template with bypass_consent true' },
    422: {
      idempotency_key_mismatch:
        'this admin already used the Idempotency-Key for another request: send a new key',
    },
  })
  async create(
    @CurrentUser() admin: User,
    @Body() body: CreateBroadcastDto,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<BroadcastResponseDto> {
    const outcome = await this.broadcasts.create(admin, body, idempotencyKey);
    if (outcome.replayed) res.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
    return outcome.body;
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
