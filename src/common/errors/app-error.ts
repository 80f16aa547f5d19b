import type { ErrorCode, ErrorCodeOf } from './error-codes.js';

export interface FieldError {
  field: string;
  message: string;
}

/**
 * Base of every error a service may throw on purpose. One filter (ProblemDetailsFilter) maps it to an
 * RFC 9457 problem+json response; services never throw HTTP exceptions.
 */
export abstract class AppError extends Error {
  abstract readonly status: number;
  abstract readonly title: string;
  /** Registered in ERROR_CODES (error-codes.ts) under this error's status. */
  readonly code: ErrorCode;
  /** Extra members of the problem document (e.g. errors[] for validation). */
  readonly extensions: Record<string, unknown>;
  /** Response headers the error implies (e.g. Retry-After). */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    options: { extensions?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }
}

/** At most this many entries in a problem's errors[] (issue 14: 70,000 unknown keys made a 6.5 MB answer). */
export const MAX_FIELD_ERRORS = 20;
const MAX_FIELD_TEXT = 200;
const MAX_DETAIL = 1000;

const clip = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export class ValidationError extends AppError {
  readonly status = 400;
  readonly title = 'Invalid request';
  /**
   * errors[] keeps the first MAX_FIELD_ERRORS entries; `errors_total` says how many there were.
   * `extensions` adds members of the problem document (e.g. the provider's reason for a refused request).
   */
  constructor(
    detail: string,
    errors: FieldError[] = [],
    code: ErrorCodeOf<400> = 'validation_failed',
    extensions: Record<string, unknown> = {},
  ) {
    const shown = errors
      .slice(0, MAX_FIELD_ERRORS)
      .map((e) => ({ field: clip(e.field, MAX_FIELD_TEXT), message: clip(e.message, MAX_FIELD_TEXT) }));
    super(code, clip(detail, MAX_DETAIL), {
      extensions: {
        ...extensions,
        ...(errors.length > shown.length
          ? { errors: shown, errors_total: errors.length }
          : { errors: shown }),
      },
    });
  }
}

export class UnauthenticatedError extends AppError {
  readonly status = 401;
  readonly title = 'Authentication required';
  constructor(detail = 'A valid Bearer token is required.', code: ErrorCodeOf<401> = 'unauthenticated') {
    super(code, detail, { headers: { 'WWW-Authenticate': 'Bearer' } });
  }
}

export class ForbiddenError extends AppError {
  readonly status = 403;
  readonly title = 'Forbidden';
  constructor(detail = 'You are not allowed to do this.', code: ErrorCodeOf<403> = 'forbidden') {
    super(code, detail);
  }
}

export class NotFoundError extends AppError {
  readonly status = 404;
  readonly title = 'Not found';
  constructor(detail = 'The resource does not exist.', code: ErrorCodeOf<404> = 'not_found') {
    super(code, detail);
  }
}

export class ConflictError extends AppError {
  readonly status = 409;
  readonly title = 'Conflict';
  constructor(detail: string, code: ErrorCodeOf<409> = 'conflict') {
    super(code, detail);
  }
}

export class InsufficientCreditsError extends AppError {
  readonly status = 402;
  readonly title = 'Insufficient credits';
  constructor(
    detail = 'The credit balance does not cover this operation.',
    extensions: Record<string, unknown> = {},
  ) {
    super('insufficient_credits', detail, { extensions });
  }
}

export class PayloadTooLargeError extends AppError {
  readonly status = 413;
  readonly title = 'Payload too large';
  constructor(detail = 'The request body is too large.') {
    super('payload_too_large', detail);
  }
}

/** A request body in a media type or charset the route does not read (a JSON body that is not UTF-8). */
export class UnsupportedMediaTypeError extends AppError {
  readonly status = 415;
  readonly title = 'Unsupported media type';
  constructor(detail: string) {
    super('unsupported_media_type', detail);
  }
}

export class RateLimitedError extends AppError {
  readonly status = 429;
  readonly title = 'Too many requests';
  constructor(
    retryAfterSeconds: number,
    detail = 'Rate limit exceeded.',
    headers: Record<string, string> = {},
  ) {
    const retryAfter = String(Math.max(1, Math.ceil(retryAfterSeconds)));
    super('rate_limited', detail, { headers: { ...headers, 'Retry-After': retryAfter } });
  }
}

/** An upstream provider answered badly (invalid or failed response). */
export class BadGatewayError extends AppError {
  readonly status = 502;
  readonly title = 'Upstream provider error';
  constructor(detail: string, code: ErrorCodeOf<502> = 'upstream_error', cause?: unknown) {
    super(code, detail, { cause });
  }
}

/** Seconds a 503 asks the client to wait when nothing better is known. */
export const DEFAULT_RETRY_AFTER_SECONDS = 5;

/** A store or provider we depend on is unavailable; the client may retry after `Retry-After` seconds. */
export class DependencyError extends AppError {
  readonly status = 503;
  readonly title = 'Service unavailable';
  constructor(
    detail: string,
    code: ErrorCodeOf<503> = 'dependency_unavailable',
    cause?: unknown,
    retryAfterSeconds = DEFAULT_RETRY_AFTER_SECONDS,
  ) {
    const retryAfter = String(Math.max(1, Math.ceil(retryAfterSeconds)));
    super(code, detail, { cause, headers: { 'Retry-After': retryAfter } });
  }
}
