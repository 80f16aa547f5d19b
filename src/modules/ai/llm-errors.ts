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
/** Control characters, line and paragraph separators and bidirectional overrides: never quoted. */
const UNPRINTABLE = /[\p{Cc}\p{Zl}\p{Zp}\u200E\u200F\u202A-\u202E\u2066-\u2069]+/gu;

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

/** The provider's Retry-After (seconds or HTTP date) for our answer, capped like our own waits. */
function retryAfterSeconds(headers: Headers): number {
  const ms = retryAfterMs(headers);
  return ms === null ? DEFAULT_RETRY_AFTER_SECONDS : Math.max(1, Math.ceil(ms / 1000));
}

/**
 * What a non-2xx provider answer (after HttpClient's retries) means for our caller; the credits are
 * refunded in every case (CompletionsService). docs/decisions/credits.md "Failures":
 * - 429 -> 503 `upstream_rate_limited`, 5xx -> 503 `upstream_unavailable`, both with the provider's last
 *   Retry-After (capped at 30 s, 5 s when it sent none): the same request may succeed later;
 * - 400/413/422 -> 400 `completion_rejected` quoting the provider's reason: the request itself is at fault
 *   and fails again unchanged. A rejection of `model` is our configuration, not the request: 502;
 * - anything else (401/403/404: our key, model or address) -> 502 `upstream_error`, no provider text.
 */
export function completionFailure(
  err: ProviderHttpError,
  reason = providerReason(err.responseBody),
): AppError {
  const status = err.httpStatus;
  if (status === 429) {
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
  if (REJECTED_STATUSES.has(status) && reason.param !== 'model') {
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
