import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { ConflictError, ValidationError } from '../../common/errors/app-error.js';
import type { User } from '../../generated/prisma/client.js';
import { MeteredCreditsService, type Reservation } from '../credits/metered-credits.service.js';
import { actualCredits, DEFAULT_MAX_TOKENS, estimateCredits, tierLimits } from './ai-pricing.js';
import type { CompletionResponseDto } from './dto/completion-response.dto.js';
import type { ChatMessageDto, CreateCompletionDto } from './dto/create-completion.dto.js';
import {
  assertSameRequest,
  type IdempotentOutcome,
  requestHash,
} from '../../common/idempotency/idempotency-key.js';
import { meteredJobId, ReplayStore } from './idempotency.js';
import { LlmClient } from './llm.client.js';

export interface PreparedCompletion {
  userId: string;
  jobId: string;
  keyed: boolean;
  messages: ChatMessageDto[];
  maxTokens: number;
  /** The caller sent max_tokens (false: `maxTokens` is the default of its tier). */
  callerSetMaxTokens: boolean;
  hash: string;
  /** Credits reserved before the call: its highest possible cost. */
  estimate: number;
}

/** `replayed`: the response of an earlier request with the same Idempotency-Key, sent again without a charge. */
export type CompletionOutcome = IdempotentOutcome<CompletionResponseDto>;

/**
 * The metered language-model call: reserve the highest possible cost and commit, call the provider,
 * then settle to the real cost from `usage` or refund at once when the call failed. A crash between the
 * reservation and its settle leaves an open hold that the reconciler refunds after 5 minutes.
 */
@Injectable()
export class CompletionsService {
  private readonly logger = new Logger(CompletionsService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly metered: MeteredCreditsService,
    private readonly llm: LlmClient,
    private readonly replays: ReplayStore,
  ) {}

  /** Checks the request against the tier (400) and prices it; no side effects. */
  prepare(user: User, dto: CreateCompletionDto, idempotencyKey?: string): PreparedCompletion {
    const limits = tierLimits(this.config.project, user.currentTier);
    const maxTokens = dto.max_tokens ?? Math.min(DEFAULT_MAX_TOKENS, limits.maxTokensPerRequest);
    if (maxTokens > limits.maxTokensPerRequest) {
      throw new ValidationError(
        `max_tokens may be at most ${limits.maxTokensPerRequest} on your plan.`,
        [
          {
            field: 'max_tokens',
            message: `max_tokens must not be greater than ${limits.maxTokensPerRequest}`,
          },
        ],
        'max_tokens_exceeded',
      );
    }
    const messages = dto.messages.map(({ role, content }) => ({ role, content }));
    return {
      userId: user.id,
      jobId: meteredJobId(user.id, idempotencyKey),
      keyed: idempotencyKey !== undefined,
      messages,
      maxTokens,
      callerSetMaxTokens: typeof dto.max_tokens === 'number',
      hash: requestHash({ messages, max_tokens: maxTokens }),
      estimate: estimateCredits(messages, maxTokens, this.config.project.creditsPer1kTokens),
    };
  }

  async run(request: PreparedCompletion): Promise<CompletionOutcome> {
    const reservation = await this.metered.reserve({
      userId: request.userId,
      amount: request.estimate,
      jobId: request.jobId,
      details: { request_hash: request.hash, max_tokens: request.maxTokens, model: this.config.llm.model },
    });
    if (!reservation.applied) return this.repeated(request, reservation);

    let completion;
    try {
      completion = await this.llm.complete(request.messages, request.maxTokens, {
        callerSetMaxTokens: request.callerSetMaxTokens,
      });
    } catch (err) {
      // If this refund fails too (database gone), the hold stays open and the reconciler refunds it.
      await this.metered
        .refund(request.jobId, 'provider_failed')
        .catch((refundErr: Error) =>
          this.logger.error({ err: refundErr.message, job_id: request.jobId }, 'immediate refund failed'),
        );
      throw err;
    }

    const cost = actualCredits(completion.usage, this.config.project.creditsPer1kTokens);
    if (cost > request.estimate) {
      this.logger.warn(
        { job_id: request.jobId, cost, reserved: request.estimate },
        'provider reported more tokens than the reservation allows; charging the reservation',
      );
    }
    // A failed settle leaves the hold open: the reconciler refunds it, the customer is not charged.
    const settlement = await this.metered.settle(request.jobId, cost).catch((err: Error) => {
      this.logger.error(
        { err: err.message, job_id: request.jobId },
        'settle failed; the reconciler will refund',
      );
      return null;
    });
    const body: CompletionResponseDto = {
      id: request.jobId,
      content: completion.content,
      refusal: completion.refusal,
      usage: completion.usage,
      credits_charged: settlement?.charged ?? 0,
    };
    if (request.keyed) await this.replays.save(request.jobId, request.hash, body);
    return { body, replayed: false };
  }

  /** A retry with the same Idempotency-Key: never charged again. */
  private async repeated(
    request: PreparedCompletion,
    reservation: Extract<Reservation, { applied: false }>,
  ): Promise<CompletionOutcome> {
    const details = reservation.spend.details as { request_hash?: string } | null;
    assertSameRequest(details?.request_hash, request.hash);
    if (reservation.state === 'in_progress') {
      throw new ConflictError(
        'A request with this Idempotency-Key is still in progress.',
        'request_in_progress',
      );
    }
    if (reservation.state === 'refunded') {
      throw new ConflictError(
        'The request with this Idempotency-Key failed and its credits were refunded. Send a new key to try again.',
        'idempotency_key_reused',
      );
    }
    const body = await this.replays.load<CompletionResponseDto>(request.jobId, request.hash);
    if (!body) {
      throw new ConflictError(
        'The request with this Idempotency-Key already completed; its response is no longer available.',
        'idempotency_key_reused',
      );
    }
    return { body, replayed: true };
  }
}
