import { Controller, Get, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { AdminOnly } from '../../auth/admin.guard.js';
import { AdminDirectoryService } from './admin-directory.service.js';
import { ListAdminUsersQueryDto, ListAuditQueryDto } from './dto/admin-list.query.dto.js';
import { AdminUserListDto, AuditListDto } from './dto/admin-list.response.dto.js';

@ApiTags('admin')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'No or invalid Bearer token' })
@ApiBadRequestResponse({ description: 'validation_failed: e.g. page_size out of range' })
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
  audit(@Query() query: ListAuditQueryDto): Promise<AuditListDto> {
    return this.directory.audit(query);
  }
}
