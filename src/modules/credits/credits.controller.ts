import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
import type { User } from '../../generated/prisma/client.js';
import { CreditsService } from './credits.service.js';
import { CreditsPageDto } from './dto/credits-response.dto.js';
import { PageQueryDto } from '../../common/paging/page-query.dto.js';

@ApiTags('credits')
@ApiBearerAuth()
@Controller('credits')
export class CreditsController {
  constructor(private readonly credits: CreditsService) {}

  /** The caller's balance and ledger rows, newest first. */
  @ApiOperation({
    summary: 'Get my credit balance and ledger',
    description:
      'The balance and the ledger rows, newest first. Invalid paging values are reset, never refused.',
  })
  @Get()
  @ApiOkResponse({ type: CreditsPageDto })
  async list(@CurrentUser() user: User, @Query() query: PageQueryDto): Promise<CreditsPageDto> {
    const { balance, planRemaining, purchasedRemaining, planExpiresAt, items, total } =
      await this.credits.history(user.id, { page: query.page, pageSize: query.page_size });
    return {
      balance,
      plan_remaining: planRemaining,
      purchased_remaining: purchasedRemaining,
      plan_expires_at: planExpiresAt?.toISOString() ?? null,
      items: items.map((row) => ({
        id: row.id,
        delta: row.delta,
        kind: row.kind,
        job_id: row.jobId,
        created_at: row.createdAt,
      })),
      total,
      page: query.page,
      page_size: query.page_size,
    };
  }
}
