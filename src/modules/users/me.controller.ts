import { Body, Controller, Get, Patch } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiForbiddenResponse,
  ApiOkResponse,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { AllowDeleted } from '../../common/decorators/allow-deleted.decorator.js';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
import type { User } from '../../generated/prisma/client.js';
import { MeResponseDto } from './dto/me-response.dto.js';
import { UpdateMeDto } from './dto/update-me.dto.js';
import { ProfileService } from './profile.service.js';

@ApiTags('current user')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'No or invalid Bearer token' })
@Controller('me')
export class MeController {
  constructor(private readonly profile: ProfileService) {}

  /** Profile, tier, credit balance, consent, attribution and deletion state of the caller. */
  @Get()
  @AllowDeleted()
  @ApiOkResponse({ type: MeResponseDto })
  me(@CurrentUser() user: User): Promise<MeResponseDto> {
    return this.profile.me(user.id);
  }

  /** Changes locale and marketing consent (the only mutable fields). */
  @Patch()
  @ApiOkResponse({ type: MeResponseDto })
  @ApiForbiddenResponse({ description: 'account_deleted: the account is scheduled for deletion' })
  update(@CurrentUser() user: User, @Body() dto: UpdateMeDto): Promise<MeResponseDto> {
    return this.profile.update(user, dto);
  }
}
