import { Controller, Delete, Get, HttpCode, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiNoContentResponse, ApiOkResponse, ApiTags, ApiParam } from '@nestjs/swagger';
import { ApiErrors } from '../../../common/openapi/api-errors.decorator.js';
import { CurrentUser } from '../../../common/decorators/current-user.decorator.js';
import type { User } from '../../../generated/prisma/client.js';
import { userActor } from '../../audit/audit.service.js';
import { AdminOnly } from '../../auth/admin.guard.js';
import { ListSuppressionsQueryDto, SuppressionListDto } from '../dto/suppressions.dto.js';
import { SuppressionsService } from './suppressions.service.js';

@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/email/suppressions')
export class SuppressionsController {
  constructor(private readonly suppressions: SuppressionsService) {}

  /** Suppressed addresses (permanent bounces, complaints, manual entries), newest first. */
  @Get()
  @ApiOkResponse({ type: SuppressionListDto })
  @ApiErrors({ 400: { validation_failed: 'page_size out of range, an unknown reason or query parameter' } })
  list(@Query() query: ListSuppressionsQueryDto): Promise<SuppressionListDto> {
    return this.suppressions.list(query);
  }

  /** Takes an address off the list (audit `email.unsuppressed`); mail reaches it again. */
  @Delete(':email')
  @HttpCode(204)
  @ApiParam({ name: 'email', type: String, format: 'email', example: 'ada@example.com' })
  @ApiNoContentResponse({ description: 'Removed.' })
  @ApiErrors({
    400: {
      validation_failed:
        'no entry can have this value: entries are 1 to 320 characters with an @ and no NUL, compared trimmed and lower-cased (any other value not on the list is a 404)',
    },
    404: { not_found: 'the address is not on the list' },
  })
  async remove(@CurrentUser() admin: User, @Param('email') email: string): Promise<void> {
    await this.suppressions.remove(email, userActor(admin.identityUserId));
  }
}
