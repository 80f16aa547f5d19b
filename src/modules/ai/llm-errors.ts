import {
  type AppError,
  BadGatewayError,
  DEFAULT_RETRY_AFTER_SECONDS,
  DependencyError,
  ValidationError,
} from '../../common/errors/app-error.js';
import { type ProviderHttpError, retryAfterMs } from '../../infra/http/http-client.js';

/** Provider statuses that mean "this request cannot be served as it is" (OpenAI: BadRequest, 413, Unprocessable). */
const REJECTED_STATUSES = new Set([400, 413, 422]);
/** The longest provider message a `completion_rejected` detail quotes. */
export const MAX_PROVIDER_MESSAGE = 300;
/** A provider's `type`/`code`/`param` is an identifier; anything else is not quoted. */
const IDENTIFIER = /^[A-Za-z0-9_.:[\]-]{1,64}$/;
/**
 * Control characters, format characters (bidirectional marks, overrides and isolates, U+061C, zero-width
 * spaces and joiners U+200B-U+200D, U+2060, U+FEFF, ...) and line and paragraph separators: never quoted.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+/gu;
/**
 * Codes that name a problem with the request's content (OpenAI and OpenAI-compatible providers): the
 * prompt is over the model's context window, or a content policy / content filter refused it (OpenAI's
 * `content_policy_violation` and `invalid_prompt`, Azure OpenAI's `content_filter`).
 */
const CONTENT_CODES = new Set([
  'context_length_exceeded',
  'content_policy_violation',
  'content_filter',
  'invalid_prompt',
]);
/**
 * Types that name a problem with the request's content: llama.cpp's server (an OpenAI-compatible
 * self-hosted model) answers a prompt over the context window with 400 `exceed_context_size_error` and the
 * HTTP status as `code` (`format_error_response`).
 */
const CONTENT_TYPES = new Set(['exceed_context_size_error']);
/** `messages`, `messages[0].content`, `messages.0.content`: a part of the caller's messages. */
const MESSAGES_PARAM = /^messages(?:$|[[.])/;
/**
 * The `type` of an invalid request: OpenAI's, and vLLM's (its server answers every request validation error
 * with 400 `BadRequestError`, the HTTP status as `code` and the failing field as `param`).
 */
const INVALID_REQUEST_TYPES = new Set(['invalid_request_error', 'BadRequestError']);
/**
 * vLLM's refusals over the model's context window name the window in every version's wording (README of
 * test/contracts/fixtures/vllm): `This model's maximum context length is 4096 tokens` (`_validate_input`,
 * older servers) or `the model's context length is only 4096 tokens` (the renderer).
 */
const VLLM_WINDOW = /\bcontext length is (?:only )?(\d+) tokens\b/;
/**
 * The prompt's size in tokens in those wordings: `You passed 5000 input tokens` (renderer), `your request
 * has 5000 input tokens` (`_validate_input`), `(5000 in the messages, 1024 in the completion)` (older).
 */
const VLLM_PROMPT_TOKENS =
  /\b(?:You passed|your request has) (\d+) input tokens\b|\((\d+) in the messages, \d+ in the completion\)/;
/**
 * The renderer's check before tokenizing: `You passed C input characters ... a maximum input length of L
 * tokens (at most K characters)`, K being L times its characters-per-token bound.
 */
const VLLM_PROMPT_CHARS =
  /\bYou passed (\d+) input characters\b.*\bmaximum input length of (\d+) tokens \(at most (\d+) characters\)/;
/** OpenAI's 429 for an account out of money (`type` and, in newer answers, `code`). */
const QUOTA_EXHAUSTED = 'insufficient_quota';

/** The provider's reason, from an OpenAI error body: `{error: {message, type, param, code}}`. */
export interface ProviderReason {
  type: string | null;
  code: string | null;
  param: string | null;
  /** One line, without control characters, at most MAX_PROVIDER_MESSAGE characters. */
  message: string | null;
}

const identifier = (value: unknown): string | null => {
  const text = typeof value === 'number' && Number.isInteger(value) ? String(value) : value;
  return typeof text === 'string' && IDENTIFIER.test(text) ? text : null;
};

/** Provider text made safe to quote: one line, no control or direction characters, clipped. */
export function printableMessage(value: unknown, max = MAX_PROVIDER_MESSAGE): string | null {
  if (typeof value !== 'string') return null;
  const text = value.replace(UNPRINTABLE, ' ').replace(/\s+/g, ' ').trim();
  if (!text) return null;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * Reads an OpenAI-shaped error body (openai-node's `ErrorObject`). Like the SDK (`APIError.generate`), a
 * body without the `error` wrapper is read as the error itself; anything else gives nulls.
 */
export function providerReason(body: unknown): ProviderReason {
  const outer = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const inner =
    typeof outer.error === 'object' && outer.error !== null
      ? (outer.error as Record<string, unknown>)
      : outer;
  return {
    type: identifier(inner.type),
    code: identifier(inner.code),
    param: identifier(inner.param),
    message: printableMessage(inner.message),
  };
}

/** What we sent that the provider's verdict depends on. */
export interface SentRequest {
  /** The caller chose `max_tokens` (false: we sent the tier's default). */
  callerSetMaxTokens: boolean;
}

/** OpenAI's `insufficient_quota` 429: our account is out of money; it clears only when someone pays. */
export const isQuotaExhausted = (status: number, reason: ProviderReason): boolean =>
  status === 429 && (reason.code === QUOTA_EXHAUSTED || reason.type === QUOTA_EXHAUSTED);

/** vLLM's refusal of a request over the model's context window (prompt plus `max_tokens`, or the prompt alone). */
export const isVllmWindowRefusal = (reason: ProviderReason): boolean =>
  reason.type === 'BadRequestError' && reason.message !== null && VLLM_WINDOW.test(reason.message);

/**
 * Whether vLLM's window refusal says the prompt alone is over the window, leaving no room for one token
 * whatever `max_tokens` we sent: the prompt's tokens against the window, read from the message. Its `param`
 * cannot tell: the renderer answers `input_tokens` both for a prompt over the window and for one that only
 * leaves less room than `max_tokens`. A message without both numbers says no (our default then takes the
 * blame, never the caller). The character check counts characters, not tokens: the prompt is over the window
 * for certain only when it is longer than the whole window at vLLM's characters-per-token bound (the
 * message's `at most K characters` for `L tokens`).
 */
function vllmPromptOverWindow(message: string | null): boolean {
  const window = message === null ? null : VLLM_WINDOW.exec(message);
  if (message === null || window === null) return false;
  const windowTokens = Number(window[1]);
  const tokens = VLLM_PROMPT_TOKENS.exec(message);
  if (tokens) return Number(tokens[1] ?? tokens[2]) >= windowTokens;
  const chars = VLLM_PROMPT_CHARS.exec(message);
  return chars !== null && Number(chars[1]) * Number(chars[2]) > Number(chars[3]) * windowTokens;
}

/**
 * Whether a 400/413/422 names a problem with the request's content, which the caller can change: a
 * content code or type, or an invalid request (`invalid_request_error`, vLLM's `BadRequestError`) on the
 * caller's `messages`, or on `max_tokens` when the caller chose it (not `unsupported_parameter`: we always
 * send max_tokens, so a model that does not take it is our configuration). vLLM's refusal over the model's
 * context window is decided first, on its numbers: the caller's when they chose `max_tokens` or when the
 * prompt alone is over the window, ours when our default `max_tokens` left a prompt that fits no room.
 * Anything else (a bad key some providers answer with 400, our default max_tokens above the model's limit,
 * a parameter the model does not support, `model`) is ours.
 */
export function isRequestContentProblem(reason: ProviderReason, sent: SentRequest): boolean {
  if (isVllmWindowRefusal(reason)) {
    return sent.callerSetMaxTokens || vllmPromptOverWindow(reason.message);
  }
  if (reason.code !== null && CONTENT_CODES.has(reason.code)) return true;
  if (reason.type !== null && CONTENT_TYPES.has(reason.type)) return true;
  if (reason.type === null || !INVALID_REQUEST_TYPES.has(reason.type) || reason.param === null) return false;
  if (MESSAGES_PARAM.test(reason.param)) return true;
  return reason.param === 'max_tokens' && sent.callerSetMaxTokens && reason.code !== 'unsupported_parameter';
}

/** The provider's Retry-After (seconds or HTTP date) for our answer, capped like our own waits. */
function retryAfterSeconds(headers: Headers): number {
  const ms = retryAfterMs(headers);
  return ms === null ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil(ms / 1000));
}

/**
 * What a non-2xx provider answer (after HttpClient's retries) means for our caller; the credits are
 * refunded in every case (CompletionsService). docs/decisions/credits.md "Failures":
 * - 429 -> 503 `upstream_rate_limited`, 5xx -> 503 `upstream_unavailable`, both with the provider's last
 *   Retry-After (capped at 30 s, 5 s when it sent none): the same request may succeed later. Not a 429
 *   `insufficient_quota`: our account is out of money, 502 below;
 * - 400/413/422 naming a problem with the request's content (`isRequestContentProblem`) -> 400
 *   `completion_rejected` quoting the provider's reason: the request fails again unchanged;
 * - anything else (other 400s, 401/403/404: our key, model, address or parameters) -> 502
 *   `upstream_error`, no provider text.
 */
export function completionFailure(
  err: ProviderHttpError,
  sent: SentRequest,
  reason = providerReason(err.responseBody),
): AppError {
  const status = err.httpStatus;
  if (status === 429 && !isQuotaExhausted(status, reason)) {
    return new DependencyError(
      'The language-model provider is rate limiting this service; the credits were refunded. Try again after Retry-After.',
      'upstream_rate_limited',
      err,
      retryAfterSeconds(err.responseHeaders),
    );
  }
  if (status >= 500) {
    return new DependencyError(
      'The language-model provider is failing; the credits were refunded. Try again after Retry-After.',
      'upstream_unavailable',
      err,
      retryAfterSeconds(err.responseHeaders),
    );
  }
  if (REJECTED_STATUSES.has(status) && isRequestContentProblem(reason, sent)) {
    const names = [reason.type && `type ${reason.type}`, reason.code && `code ${reason.code}`].filter(
      Boolean,
    );
    const quoted = `${names.length ? ` (${names.join(', ')})` : ''}${reason.message ? `: ${reason.message}` : '.'}`;
    return new ValidationError(
      `The language-model provider refused this request; the credits were refunded and the same request will be refused again. Provider answer ${status}${quoted}`,
      [],
      'completion_rejected',
      { provider_error: { status, type: reason.type, code: reason.code, param: reason.param } },
    );
  }
  return new BadGatewayError('The language-model provider call failed.', 'upstream_error', err);
}
