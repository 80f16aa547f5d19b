import { Controller, HttpCode, Post, type RawBodyRequest, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiIdentityWebhook } from '../../common/openapi/webhook-docs.js';
import type { Request } from 'express';
import { Public } from '../../common/decorators/public.decorator.js';
import { IdentityWebhookService, type WebhookReceipt } from './identity-webhook.service.js';

@ApiTags('webhooks')
@Public()
@Controller('webhooks')
export class IdentityWebhookController {
  constructor(private readonly webhooks: IdentityWebhookService) {}

  /** Identity provider events, signed per Standard Webhooks (webhook-* or svix-* headers). */
  @Post('identity')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Receive an identity provider event',
    description:
      'Clerk user events signed per Standard Webhooks (`webhook-*` or `svix-*` headers). Verified events are stored and answered at once; the worker applies them shortly after.',
  })
  @ApiIdentityWebhook()
  receive(@Req() req: RawBodyRequest<Request>): Promise<WebhookReceipt> {
    return this.webhooks.receive(req.rawBody, req.headers);
  }
}
