import { Controller, Headers, HttpCode, Post, Req, type RawBodyRequest } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiBillingWebhook } from '../../../common/openapi/webhook-docs.js';
import type { Request } from 'express';
import { Public } from '../../../common/decorators/public.decorator.js';
import { BillingWebhookService, type WebhookReceipt } from './billing-webhook.service.js';

/** Paddle Billing-shaped webhooks; authenticated by signature only. Outside /api/v1 (configure-app.ts). */
@ApiTags('webhooks')
@Public()
@Controller('webhooks')
export class BillingWebhookController {
  constructor(private readonly webhooks: BillingWebhookService) {}

  @Post('billing')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Receive a billing provider event',
    description:
      'Paddle Billing webhooks, authenticated by `Paddle-Signature` only. Verified events are stored and answered at once; the worker applies them (tier, credits, payments) shortly after.',
  })
  @ApiBillingWebhook()
  receive(
    @Req() req: RawBodyRequest<Request>,
    @Headers('paddle-signature') signature: string | undefined,
  ): Promise<WebhookReceipt> {
    return this.webhooks.receive(req.rawBody, signature);
  }
}
