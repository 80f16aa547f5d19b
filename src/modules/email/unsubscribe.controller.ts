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
import { EmailLinkRoutes, NeverRefusedEmailLink } from './email-link-limit.guard.js';
import { UnsubscribedDto } from './dto/consent-links.dto.js';
import { UnsubscribeService } from './unsubscribe.service.js';
import { confirmationPage, pageOrJson, unsubscribedPage } from './unsubscribe.pages.js';

const TOKEN_QUERY = {
  name: 't',
  required: true,
  type: String,
  description: 'HMAC-signed unsubscribe token from the e-mail',
};

/** Public: the token in `t` is the only authentication (spec: the one public route under /api/v1). */
@ApiTags('email')
@Public()
@EmailLinkRoutes('marketing')
@Controller('email')
export class UnsubscribeController {
  constructor(private readonly unsubscribe: UnsubscribeService) {}

  @ApiOperation({
    summary: 'Unsubscribe confirmation page',
    description: 'An HTML page whose button POSTs; nothing changes on GET.',
  })
  @Get('unsubscribe')
  @ApiQuery(TOKEN_QUERY)
  @ApiProduces('text/html')
  @ApiOkResponse({ description: 'A confirmation page whose button POSTs; nothing changes on GET.' })
  @ApiErrors({ 400: { invalid_unsubscribe_token: 'a missing, malformed or tampered token' } })
  page(@Query('t') token: unknown, @Res({ passthrough: true }) res: Response): string {
    this.unsubscribe.check(token);
    res.type('html').setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Robots-Tag', 'noindex');
    return confirmationPage(token as string);
  }

  /**
   * RFC 8058 one-click: mail clients POST `List-Unsubscribe=One-Click` form-encoded or as multipart.
   * The body carries nothing we need (the token authenticates), so it is not required or parsed.
   */
  @ApiOperation({
    summary: 'Unsubscribe (one click)',
    description:
      'RFC 8058 one-click: mail clients POST `List-Unsubscribe=One-Click`; the token in `t` authenticates. Answers JSON, or a page to a browser form. A valid token is never refused for the per-user e-mail link limit (the withdrawal is idempotent); a refused token counts for its client address.',
  })
  @Post('unsubscribe')
  @NeverRefusedEmailLink()
  @HttpCode(200)
  @ApiQuery(TOKEN_QUERY)
  @ApiConsumes('application/x-www-form-urlencoded', 'multipart/form-data')
  @ApiBody({
    required: false,
    description: 'What mail clients send (RFC 8058); read as bytes, never decoded or required.',
    schema: {
      type: 'object',
      properties: { 'List-Unsubscribe': { type: 'string', enum: ['One-Click'] } },
    },
  })
  @ApiOkResponse({
    type: UnsubscribedDto,
    description:
      'Unsubscribed (also when already unsubscribed). No redirect. A browser form (Accept preferring text/html) gets the confirmation page instead of JSON.',
  })
  @ApiErrors({
    400: { invalid_unsubscribe_token: 'a missing, malformed or tampered token (nothing changes)' },
    503: { dependency_unavailable: 'the database is unavailable (retry after `Retry-After` seconds)' },
  })
  async oneClick(
    @Query('t') token: unknown,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string | UnsubscribedDto> {
    await this.unsubscribe.unsubscribe(token);
    // The confirmation page's form gets a page back; mail clients and API callers get JSON.
    return pageOrJson<UnsubscribedDto>(req, res, unsubscribedPage, { unsubscribed: true });
  }
}
