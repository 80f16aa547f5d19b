import { Body, Controller, Get, Patch } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiForbiddenResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { AllowDeleted } from '../../common/decorators/allow-deleted.decorator.js';
import { CurrentPrincipal, CurrentUser } from '../../common/decorators/current-user.decorator.js';
import { ForbiddenError } from '../../common/errors/app-error.js';
import type { Principal } from '../../common/principal.js';
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
  @ApiOperation({
    summary: 'Get the current user',
    description:
      'Profile, tier, credit balance, consent, attribution and deletion state of the caller. The user is created on the first authenticated request. After a checkout, poll this until `current_tier` shows the new tier.',
  })
  @Get()
  @AllowDeleted()
  @ApiOkResponse({ type: MeResponseDto })
  me(@CurrentUser() user: User): Promise<MeResponseDto> {
    return this.profile.me(user.id);
  }

  /**
   * Changes locale and marketing consent (the only mutable fields). Consent is the person's own
   * declaration: an API key (a script, possibly leaked) may change the locale but not consent.
   */
  @ApiOperation({
    summary: 'Update locale and marketing consent',
    description:
      "The only mutable fields. Consent is the person's own declaration: an API key may change the locale but not consent.",
  })
  @Patch()
  @ApiOkResponse({ type: MeResponseDto })
  @ApiForbiddenResponse({
    description:
      'account_deleted: the account is scheduled for deletion; api_key_not_allowed: consent changed with an API key',
  })
  update(@CurrentPrincipal() principal: Principal, @Body() dto: UpdateMeDto): Promise<MeResponseDto> {
    if (
      principal.via === 'api_key' &&
      (dto.marketing_consent_given !== undefined || dto.marketing_consent_source !== undefined)
    ) {
      throw new ForbiddenError(
        'API keys cannot change marketing consent. Sign in to do this.',
        'api_key_not_allowed',
      );
    }
    return this.profile.update(principal.user, dto);
  }
}
