import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { AllowDeleted } from '../../src/common/decorators/allow-deleted.decorator.js';
import { CurrentPrincipal } from '../../src/common/decorators/current-user.decorator.js';
import { Public } from '../../src/common/decorators/public.decorator.js';
import { ConflictError } from '../../src/common/errors/app-error.js';
import { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { AdminOnly } from '../../src/modules/auth/admin.guard.js';
import type { Principal } from '../../src/common/principal.js';

class EchoDto {
  @IsString()
  @MaxLength(10)
  name!: string;

  @IsInt()
  @Min(1)
  @Max(5)
  rating!: number;
}

/**
 * Test-only routes that exercise the platform (auth guard, admin guard, errors, validation) without
 * depending on a feature module. Mounted only by tests, never by the application.
 */
@Controller('probe')
class ProbeController {
  constructor(private readonly prisma: PrismaService) {}

  @Get('whoami')
  whoami(@CurrentPrincipal() principal: Principal) {
    return { id: principal.user.id, identity_user_id: principal.user.identityUserId, via: principal.via };
  }

  @Get('deleted-ok')
  @AllowDeleted()
  deletedOk(@CurrentPrincipal() principal: Principal) {
    return { deleted: principal.user.deletedAt !== null };
  }

  @Get('admin')
  @AdminOnly()
  admin() {
    return { admin: true };
  }

  @Public()
  @Post('echo')
  echo(@Body() body: EchoDto) {
    return body;
  }

  @Public()
  @Get('boom')
  boom() {
    throw new Error('secret internals: password=hunter2 at /srv/app.ts:42');
  }

  /** Stores a workspace name with no DTO in front: only the VARCHAR(200) column limits it. */
  @Post('unchecked-workspace')
  async uncheckedWorkspace(@CurrentPrincipal() principal: Principal, @Body('name') name: string) {
    const row = await this.prisma.workspace.create({ data: { userId: principal.user.id, name } });
    return { id: row.id };
  }

  @Public()
  @Get('conflict')
  conflict() {
    throw new ConflictError('Already there.', 'limit_reached');
  }
}

@Module({ controllers: [ProbeController] })
export class ProbeModule {}
