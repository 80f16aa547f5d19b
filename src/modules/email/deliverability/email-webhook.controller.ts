import { Controller, HttpCode, Post, type RawBodyRequest, Req } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiStandardWebhookHeaders } from '../../../common/openapi/webhook-docs.js';
import { Public } from '../../../common/decorators/public.decorator.js';
import { EmailWebhookService, type EmailWebhookReceipt } from './email-webhook.service.js';

@ApiTags('webhooks')
@Public()
@Controller('webhooks')
export class EmailWebhookController {
  constructor(private readonly webhooks: EmailWebhookService) {}

  /** E-mail provider (Resend) delivery events, signed per Standard Webhooks (svix-* or webhook-* headers). */
  @Post('email')
  @HttpCode(200)
  @ApiStandardWebhookHeaders('EMAIL_WEBHOOK_SECRET')
  @ApiOkResponse({
    description:
      '{received, event_id, status: accepted | duplicate}; the worker applies accepted events shortly after',
  })
  receive(@Req() req: RawBodyRequest<Request>): Promise<EmailWebhookReceipt> {
    return this.webhooks.receive(req.rawBody, req.headers);
  }
}
