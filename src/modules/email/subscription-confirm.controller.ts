import { Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../../common/decorators/public.decorator.js';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';
import { EmailLinkRoutes } from './email-link-limit.guard.js';
import { SubscribedDto } from './dto/consent-links.dto.js';
import { SubscriptionConfirmService } from './subscription-confirm.service.js';
import { confirmSubscriptionPage, pageOrJson, subscriptionConfirmedPage } from './unsubscribe.pages.js';

const TOKEN_QUERY = {
  name: 't',
  type: String,
  required: true,
  description: 'HMAC-signed confirmation token from the confirm_subscription e-mail (valid 7 days)',
};

/** Public: the token in `t` is the only authentication, as for unsubscribe. */
@ApiTags('email')
@Public()
@EmailLinkRoutes('confirm')
@Controller('email')
export class SubscriptionConfirmController {
  constructor(private readonly confirmations: SubscriptionConfirmService) {}

  @Get('confirm')
  @ApiOperation({
    summary: 'Show the marketing-consent confirmation page',
    description:
      'The link of the confirm_subscription e-mail (double opt-in); its button POSTs the same URL.',
  })
  @ApiQuery(TOKEN_QUERY)
  @ApiProduces('text/html')
  @ApiOkResponse({ description: 'A page whose button POSTs; nothing changes on GET.' })
  @ApiErrors({
    400: {
      invalid_confirmation_token:
        'a missing, tampered or expired link, or one issued before consent was last withdrawn',
    },
    503: { dependency_unavailable: 'the database is unavailable (retry after `Retry-After` seconds)' },
  })
  async page(@Query('t') token: unknown, @Res({ passthrough: true }) res: Response): Promise<string> {
    await this.confirmations.check(token);
    res.type('html').setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Robots-Tag', 'noindex');
    return confirmSubscriptionPage(token as string);
  }

  @Post('confirm')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Confirm marketing consent (double opt-in)',
    description: 'Gives consent with source double_opt_in; JSON or an HTML page depending on Accept.',
  })
  @ApiQuery(TOKEN_QUERY)
  @ApiConsumes('application/x-www-form-urlencoded', 'multipart/form-data')
  @ApiBody({
    required: false,
    description: "The confirmation page's empty form; nothing in it is read.",
    schema: { type: 'object' },
  })
  @ApiOkResponse({
    type: SubscribedDto,
    description:
      'Subscribed (also when already subscribed). No redirect. A browser form (Accept preferring text/html) gets a page instead of JSON.',
  })
  @ApiErrors({
    400: {
      invalid_confirmation_token:
        'a missing, tampered or expired link, or one issued before consent was last withdrawn (nothing changes)',
    },
    503: { dependency_unavailable: 'the database is unavailable (retry after `Retry-After` seconds)' },
  })
  async confirm(
    @Query('t') token: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string | SubscribedDto> {
    await this.confirmations.confirm(token);
    return pageOrJson<SubscribedDto>(req, res, subscriptionConfirmedPage, { subscribed: true });
  }
}
