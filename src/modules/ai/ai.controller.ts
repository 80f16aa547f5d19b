import { Body, Controller, Headers, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
import {
  ApiIdempotencyKey,
  IDEMPOTENT_REPLAYED_RESPONSE_HEADER,
} from '../../common/idempotency/api-idempotency-key.decorator.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
} from '../../common/idempotency/idempotency-key.js';
import type { User } from '../../generated/prisma/client.js';
import { AiRateLimiter } from './ai-rate-limiter.js';
import { CompletionsService } from './completions.service.js';
import { CompletionResponseDto } from './dto/completion-response.dto.js';
import { CreateCompletionDto } from './dto/create-completion.dto.js';

@ApiTags('ai')
@ApiBearerAuth()
@Controller('ai')
export class AiController {
  constructor(
    private readonly completions: CompletionsService,
    private readonly limiter: AiRateLimiter,
  ) {}

  /** A metered chat completion: rate limited per tier, paid for with credits, refunded when it fails. */
  @ApiOperation({
    summary: 'Run a metered chat completion',
    description:
      'Rate limited per tier (the `RateLimit-*` headers come with every answer), paid for with credits: the bound of the request is reserved, the real cost (from the usage) settled, and everything refunded when the provider fails. Send an `Idempotency-Key` to retry safely.',
  })
  @Post('completions')
  @HttpCode(200)
  @ApiIdempotencyKey(
    'Makes retries safe: the same key and body are charged once and answered from the first result for 24 h (`Idempotent-Replayed: true`). 1 to 128 of `A-Z a-z 0-9 . _ ~ : -`; a UUID per user action is a good key.',
  )
  @ApiOkResponse({
    type: CompletionResponseDto,
    headers: {
      'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
      'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
      'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
      'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
      ...IDEMPOTENT_REPLAYED_RESPONSE_HEADER,
    },
  })
  @ApiResponse({
    status: 400,
    description:
      'validation_failed (`errors[]` lists the fields), max_tokens_exceeded, invalid_idempotency_key, or completion_rejected: the language-model provider refused this request for its content (e.g. longer than the model takes, or refused by its content filter); `detail` quotes its reason and `provider_error` gives its `status`, `type`, `code` and `param`. The credits were refunded; the same request will be refused again',
  })
  @ApiResponse({ status: 402, description: 'insufficient_credits (problem+json with balance and required)' })
  @ApiResponse({ status: 409, description: 'request_in_progress or idempotency_key_reused' })
  @ApiResponse({ status: 422, description: 'idempotency_key_mismatch' })
  @ApiResponse({ status: 429, description: 'rate_limited, with Retry-After and RateLimit-* headers' })
  @ApiResponse({
    status: 502,
    description:
      'upstream_error (the provider refused our credentials or configuration, or our account with it is out of quota), upstream_invalid_response or upstream_response_too_large; the credits were refunded',
  })
  @ApiResponse({
    status: 503,
    description:
      'upstream_rate_limited (the provider is rate limiting this service), upstream_unavailable (it kept failing) or upstream_unreachable (it could not be reached), the credits refunded; or rate_limiter_unavailable, nothing charged. Retry after `Retry-After` seconds; after an upstream_* failure with a new Idempotency-Key (the failed one answers 409 idempotency_key_reused)',
    headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  })
  async complete(
    @CurrentUser() user: User,
    @Body() body: CreateCompletionDto,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CompletionResponseDto> {
    const request = this.completions.prepare(user, body, idempotencyKey);
    // Set before the call so the headers also travel on its errors (402, 502, ...).
    res.set(await this.limiter.consume(user));
    const outcome = await this.completions.run(request);
    if (outcome.replayed) res.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
    return outcome.body;
  }
}
