import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../../../common/openapi/api-errors.decorator.js';
import { AdminOnly } from '../../auth/admin.guard.js';
import { AdminDirectoryService } from './admin-directory.service.js';
import { ListAdminUsersQueryDto, ListAuditQueryDto } from './dto/admin-list.query.dto.js';
import { AdminUserListDto, AuditListDto } from './dto/admin-list.response.dto.js';

@ApiTags('admin')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin')
export class AdminDirectoryController {
  constructor(private readonly directory: AdminDirectoryService) {}

  /** Users, newest first; search by e-mail prefix, filter by tier and deletion state. */
  @ApiOperation({
    summary: 'List users',
    description: 'Users, newest first; search by e-mail prefix, filter by tier and deletion state.',
  })
  @Get('users')
  @ApiOkResponse({ type: AdminUserListDto })
  @ApiErrors({ 400: { validation_failed: 'an unknown query parameter or tier, or page_size out of range' } })
  users(@Query() query: ListAdminUsersQueryDto): Promise<AdminUserListDto> {
    return this.directory.users(query);
  }

  /** Audit entries, newest first; filters action, actor, user_id, resource_type, from, to (inclusive). */
  @ApiOperation({
    summary: 'List audit entries',
    description:
      'Audit entries, newest first; filters action, actor, user_id, resource_type, from and to (inclusive).',
  })
  @Get('audit')
  @ApiOkResponse({ type: AuditListDto })
  @ApiErrors({
    400: {
      validation_failed: 'an unknown or invalid query parameter, page_size out of range, or from after to',
    },
  })
  audit(@Query() query: ListAuditQueryDto): Promise<AuditListDto> {
    return this.directory.audit(query);
  }
}
