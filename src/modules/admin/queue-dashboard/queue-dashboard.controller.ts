import { Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../../../common/openapi/api-errors.decorator.js';
import { CurrentPrincipal } from '../../../common/decorators/current-user.decorator.js';
import { AppConfig } from '../../../config/app-config.js';
import { NotFoundError } from '../../../common/errors/app-error.js';
import { AdminOnly } from '../../auth/admin.guard.js';
import type { Principal } from '../../../common/principal.js';
import { QUEUE_DASHBOARD_PATH } from './queue-dashboard.mount.js';
import { QueueDashboardSessions } from './queue-dashboard.sessions.js';
import { QueueDashboardLinkDto } from './dto/queue-dashboard.dto.js';

@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/queue-dashboard')
export class QueueDashboardController {
  constructor(
    private readonly config: AppConfig,
    private readonly sessions: QueueDashboardSessions,
  ) {}

  /**
   * A browser cannot send a Bearer token when it navigates, so the BullMQ dashboard (/admin/queues) signs
   * a browser in with a one-time link: this answers one, valid for a minute. Opening it sets an HttpOnly
   * session cookie for the dashboard (one hour; the admin allowlist is checked again on every request).
   */
  @Post('session')
  @ApiOperation({ summary: 'A one-time link that signs a browser in to the queue dashboard (/admin/queues)' })
  @HttpCode(201)
  @ApiCreatedResponse({ type: QueueDashboardLinkDto })
  @ApiErrors({ 404: { queue_dashboard_disabled: 'QUEUE_DASHBOARD is off (production default)' } })
  async link(@CurrentPrincipal() principal: Principal): Promise<QueueDashboardLinkDto> {
    if (!this.config.queueDashboard)
      throw new NotFoundError(
        'The queue dashboard is turned off (QUEUE_DASHBOARD).',
        'queue_dashboard_disabled',
      );
    const { ticket, expiresAt } = await this.sessions.issueTicket({
      identityUserId: principal.user.identityUserId,
      via: principal.via,
    });
    return {
      url: `${this.config.email.publicBaseUrl}${QUEUE_DASHBOARD_PATH}/login?ticket=${ticket}`,
      expires_at: expiresAt.toISOString(),
    };
  }
}
