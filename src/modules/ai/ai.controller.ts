import { Body, Controller, Headers, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOkResponse, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
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
  @Post('completions')
  @HttpCode(200)
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Makes retries safe: the same key and body are charged once and replayed for 24 h.',
  })
  @ApiOkResponse({ type: CompletionResponseDto })
  @ApiResponse({ status: 402, description: 'insufficient_credits (problem+json with balance and required)' })
  @ApiResponse({ status: 409, description: 'request_in_progress or idempotency_key_reused' })
  @ApiResponse({ status: 422, description: 'idempotency_key_mismatch' })
  @ApiResponse({ status: 429, description: 'rate_limited, with Retry-After and RateLimit-* headers' })
  @ApiResponse({ status: 502, description: 'upstream_error: the provider failed; the credits were refunded' })
  @ApiResponse({ status: 503, description: 'upstream_unreachable or rate_limiter_unavailable' })
  async complete(
    @CurrentUser() user: User,
    @Body() body: CreateCompletionDto,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CompletionResponseDto> {
    const request = this.completions.prepare(user, body, idempotencyKey);
    // Set before the call so the headers also travel on its errors (402, 502, ...).
    res.set(await this.limiter.consume(user));
    const outcome = await this.completions.run(request);
    if (outcome.replayed) res.set('Idempotent-Replayed', 'true');
    return outcome.body;
  }
}
