import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AllowDeleted } from '../../common/decorators/allow-deleted.decorator.js';
import { CurrentPrincipal, CurrentUser } from '../../common/decorators/current-user.decorator.js';
import { ForbiddenError } from '../../common/errors/app-error.js';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';
import type { Principal } from '../../common/principal.js';
import type { User } from '../../generated/prisma/client.js';
import { MeResponseDto } from './dto/me-response.dto.js';
import { UpdateMeDto } from './dto/update-me.dto.js';
import { ProfileService } from './profile.service.js';

/**
 * The guard has read the account, and a soft-deleted one still reaches the @AllowDeleted() routes: the
 * daily job may erase it (its grace period over) before the route reads it again.
 */
export const USER_ERASED =
  'the account was erased (its deletion grace period was over) while the request ran';

@ApiTags('current user')
@ApiBearerAuth()
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
  @ApiErrors({ 404: { user_not_found: USER_ERASED } })
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
  @ApiErrors({
    400: {
      validation_failed:
        'an invalid body: an unknown field, a locale that is not a BCP 47 tag, marketing_consent_source without marketing_consent_given',
    },
    403: { api_key_not_allowed: 'marketing consent changed with an API key (the locale may be)' },
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
