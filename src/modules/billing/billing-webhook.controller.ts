import { Controller, Headers, HttpCode, Post, Req, type RawBodyRequest } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiTags, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import { Public } from '../../common/decorators/public.decorator.js';
import { BillingWebhookService, type WebhookReceipt } from './billing-webhook.service.js';

/** Paddle Billing-shaped webhooks; authenticated by signature only. Outside /api/v1 (configure-app.ts). */
@ApiTags('webhooks')
@Public()
@Controller('webhooks')
export class BillingWebhookController {
  constructor(private readonly webhooks: BillingWebhookService) {}

  @Post('billing')
  @HttpCode(200)
  @ApiOkResponse({
    description:
      '{received: true, status: accepted | duplicate}; the worker applies accepted events shortly after',
  })
  @ApiUnauthorizedResponse({ description: 'Missing, stale or wrong Paddle-Signature; nothing stored' })
  @ApiBadRequestResponse({ description: 'Verified body that does not match the provider contract' })
  receive(
    @Req() req: RawBodyRequest<Request>,
    @Headers('paddle-signature') signature: string | undefined,
  ): Promise<WebhookReceipt> {
    return this.webhooks.receive(req.rawBody, signature);
  }
}
