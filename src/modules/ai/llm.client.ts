import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { AppConfig } from '../../config/app-config.js';
import { AppError, BadGatewayError } from '../../common/errors/app-error.js';
import { HttpClient, isRetryableStatus, ProviderHttpError } from '../../infra/http/http-client.js';
import {
  completionFailure,
  isQuotaExhausted,
  isVllmWindowRefusal,
  providerReason,
  type SentRequest,
} from './llm-errors.js';

/**
 * The message of the first choice: an answer (`content`) or, from models that refuse, `content: null`
 * with `refusal` (OpenAI's structured refusal). A message with neither says nothing and is refused.
 */
const messageSchema = z
  .looseObject({
    content: z.string().nullish(),
    refusal: z.string().nullish(),
  })
  .refine(
    (message) => typeof message.content === 'string' || typeof message.refusal === 'string',
    'expected message.content or message.refusal',
  );

/**
 * The part of an OpenAI-compatible chat completion we use; anything else in the body (usage details,
 * logprobs, system_fingerprint, ...) is ignored.
 */
export const chatCompletionSchema = z.object({
  id: z.string().optional(),
  choices: z.array(z.looseObject({ message: messageSchema })).min(1),
  usage: z.object({
    prompt_tokens: z.number().int().min(0),
    completion_tokens: z.number().int().min(0),
  }),
});

export interface ChatCompletion {
  /** null when the model refused; `refusal` then says why. */
  content: string | null;
  refusal: string | null;
  usage: { prompt_tokens: number; completion_tokens: number };
}

/**
 * OpenAI-compatible `POST {LLM_BASE_URL}/chat/completions` through the platform HttpClient (30 s timeout,
 * at most 3 attempts on 429/5xx and network errors, response validated). The address and model come from
 * configuration only (spec rule 7).
 */
@Injectable()
export class LlmClient {
  private readonly logger = new Logger(LlmClient.name);

  constructor(
    private readonly config: AppConfig,
    private readonly http: HttpClient,
  ) {}

  /**
   * Throws AppErrors only: 503 `upstream_unreachable` when the provider could not be reached in time;
   * for its non-2xx answers see `completionFailure` (503 `upstream_rate_limited` / `upstream_unavailable`,
   * 400 `completion_rejected`, 502 `upstream_error`); 502 `upstream_invalid_response` for a 2xx off the
   * contract. `sent` says whether `maxTokens` is the caller's choice or the tier's default: a provider's
   * refusal of max_tokens is the caller's to fix only in the first case.
   */
  async complete(
    messages: { role: string; content: string }[],
    maxTokens: number,
    sent: SentRequest,
  ): Promise<ChatCompletion> {
    const { apiKey, baseUrl, model } = this.config.llm;
    try {
      const { body } = await this.http.request({
        method: 'POST',
        url: `${baseUrl}/chat/completions`,
        headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
        json: {
          model,
          messages: messages.map(({ role, content }) => ({ role, content })),
          max_tokens: maxTokens,
        },
        schema: chatCompletionSchema,
        provider: 'llm',
        // Out of quota clears only when someone pays: asking again wastes two calls and seconds.
        retryable: (status, body) =>
          isRetryableStatus(status) && !isQuotaExhausted(status, providerReason(body)),
      });
      const { content, refusal } = body.choices[0].message;
      // The tokens were spent either way, so a refusal is charged like an answer (DESIGN.md 5c).
      return { content: content ?? null, refusal: refusal ?? null, usage: body.usage };
    } catch (err) {
      if (err instanceof ProviderHttpError) throw this.failure(err, sent);
      if (err instanceof AppError) throw err;
      throw new BadGatewayError('The language-model provider call failed.', 'upstream_error', err);
    }
  }

  /**
   * The provider's identifiers are logged, never its message (it may quote the prompt or part of a key).
   * A 502 is ours to fix (key, model, address, the parameters we send, our account's quota), so it is
   * logged as an error.
   */
  private failure(err: ProviderHttpError, sent: SentRequest): AppError {
    const reason = providerReason(err.responseBody);
    const failure = completionFailure(err, sent, reason);
    const fields = {
      provider_status: err.httpStatus,
      provider_type: reason.type,
      provider_code: reason.code,
      provider_param: reason.param,
      code: failure.code,
    };
    if (isQuotaExhausted(err.httpStatus, reason)) {
      this.logger.error(
        fields,
        'the language-model provider account is out of quota (insufficient_quota): add credit or raise its spending limit at the provider',
      );
    } else if (failure.status === 502 && isVllmWindowRefusal(reason)) {
      // The prompt fits the model's window, our default max_tokens (not the caller's) does not fit beside it.
      this.logger.error(
        fields,
        "the model's context window has no room for the prompt and our default max_tokens: raise the model's context length or lower the tier's maxTokensPerRequest",
      );
    } else if (failure.status === 502) {
      this.logger.error(
        fields,
        'the language-model provider refused our call: check LLM_API_KEY, LLM_MODEL and LLM_BASE_URL, and for a 400 the parameter in provider_param',
      );
    } else {
      this.logger.warn(fields, 'the language-model provider did not complete the call');
    }
    return failure;
  }
}
