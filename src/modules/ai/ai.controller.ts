import { Body, Controller, Headers, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
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
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';
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
  @ApiErrors({
    400: {
      validation_failed: 'an invalid body (`errors[]` lists the fields)',
      max_tokens_exceeded: "max_tokens is over the plan's limit per request",
      invalid_idempotency_key: 'the Idempotency-Key is not 1 to 128 of `A-Z a-z 0-9 . _ ~ : -`',
      completion_rejected:
        'the language-model provider refused this request for its content (e.g. longer than the model takes, or refused by its content filter). `detail` quotes its reason and `provider_error` gives its `status`, `type`, `code` and `param`. The credits were refunded, and the same request will be refused again',
    },
    402: {
      insufficient_credits:
        'the balance does not cover the request (`balance` and `required` say by how much)',
    },
    403: { ai_not_in_plan: "the caller's plan includes no language-model requests" },
    409: {
      request_in_progress: 'a request with this Idempotency-Key is still running',
      idempotency_key_reused:
        'the request with this Idempotency-Key failed (its credits were refunded), or completed and its answer is no longer kept: send a new key',
    },
    422: { idempotency_key_mismatch: 'this Idempotency-Key was used with a different body' },
    429: {
      rate_limited:
        "the plan's language-model requests per minute or per day, or the account's writes per minute, are used up (wait `Retry-After` seconds)",
    },
    502: {
      upstream_error:
        'the provider refused our credentials or configuration, or our account with it is out of quota (the credits were refunded)',
      upstream_invalid_response: 'the provider answered off its contract (the credits were refunded)',
      upstream_response_too_large: 'the provider answered with too large a body (the credits were refunded)',
    },
    503: {
      upstream_rate_limited:
        'the provider is rate limiting this service. The credits were refunded: retry with a new Idempotency-Key after `Retry-After` seconds (the failed one answers 409 idempotency_key_reused)',
      upstream_unavailable:
        'the provider kept failing. The credits were refunded: retry with a new Idempotency-Key after `Retry-After` seconds',
      upstream_unreachable:
        'the provider could not be reached. The credits were refunded: retry with a new Idempotency-Key after `Retry-After` seconds',
      rate_limiter_unavailable: 'the rate limiter (Redis) is unavailable, nothing was charged',
    },
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
