import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppError, DependencyError, NotFoundError, ValidationError } from '../errors/app-error.js';
import { isValueTooLong } from '../errors/database-errors.js';
import type { ErrorCode } from '../errors/error-codes.js';
import { isDependencyFailure } from '../errors/dependency-failure.js';
import { markClosing } from '../http/closing-connections.js';
import { HELD_IP_BLOCK } from '../http/signed-link-routes.js';

/**
 * The Content-Type of every problem answer, whoever writes it (the filter, the body parser's refusals, the
 * fallback handler, the HTTP edge's raw answers): one spelling, with the charset Express gives every JSON
 * answer.
 */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/**
 * A request path whose percent-escapes do not decode (malformed, or bytes that are not UTF-8), refused
 * without quoting it: unknown paths and ids are never echoed.
 */
export const BAD_PATH_ESCAPE =
  'The request path is not valid: a percent-escape in it is malformed or does not encode UTF-8 text.';

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  request_id: string | undefined;
  [extension: string]: unknown;
}

const TITLES: Record<number, [string, ErrorCode]> = {
  400: ['Invalid request', 'bad_request'],
  401: ['Authentication required', 'unauthenticated'],
  403: ['Forbidden', 'forbidden'],
  404: ['Not found', 'not_found'],
  405: ['Method not allowed', 'method_not_allowed'],
  406: ['Not acceptable', 'not_acceptable'],
  408: ['Request timeout', 'request_timeout'],
  409: ['Conflict', 'conflict'],
  413: ['Payload too large', 'payload_too_large'],
  415: ['Unsupported media type', 'unsupported_media_type'],
  417: ['Expectation failed', 'expectation_failed'],
  422: ['Unprocessable content', 'unprocessable'],
  429: ['Too many requests', 'rate_limited'],
  500: ['Internal server error', 'internal_error'],
  502: ['Upstream provider error', 'upstream_error'],
  503: ['Service unavailable', 'dependency_unavailable'],
};

export const problemType = (code: string): string => `urn:problem:${code}`;

export function buildProblem(
  status: number,
  detail: string,
  requestId: string | undefined,
  overrides: { title?: string; code?: string; extensions?: Record<string, unknown> } = {},
): ProblemDocument {
  const [title, code]: [string, ErrorCode] =
    TITLES[status] ?? (status >= 500 ? TITLES[500] : ['Request failed', 'request_failed']);
  const finalCode = overrides.code ?? code;
  return {
    type: problemType(finalCode),
    title: overrides.title ?? title,
    status,
    detail,
    code: finalCode,
    request_id: requestId,
    ...(overrides.extensions ?? {}),
  };
}

export function sendProblem(
  res: Response,
  problem: ProblemDocument,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  // Refused before its body was read (a 415 or 413 on the announced body, a 401, a 429): Node would read
  // and drop the rest of the upload to keep the connection, for up to the request timeout. Close it instead.
  const req = res.req as Request | undefined;
  const unreadBody =
    req !== undefined &&
    !req.complete &&
    (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0);
  if (unreadBody) {
    res.setHeader('Connection', 'close');
    markClosing(req.socket);
  }
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.status(problem.status).send(JSON.stringify(problem));
}

/**
 * Express's router could not decode a path parameter (`/saved_searches/%ff`, `%zz`): a URIError it marks
 * 400, whose message quotes the parameter ("Failed to decode param '%ff'"). Nest's Express adapter hands
 * it on wrapped in a BadRequestException (its `cause`).
 */
function isBadPathEscape(error: unknown): boolean {
  const uriError = (e: unknown) =>
    typeof e === 'object' &&
    e !== null &&
    (e as { name?: unknown }).name === 'URIError' &&
    (e as { status?: unknown }).status === 400;
  return uriError(error) || (error instanceof HttpException && uriError(error.cause));
}

/**
 * What the body parsers' refusals (http-errors with a `type`: body-parser, raw-body, our JSON step) answer.
 * Their messages quote the client's bytes (JSON.parse's "Unexpected token '<', ...\"locale\": <script>..."),
 * a Content-Encoding or a charset: fixed words instead, whatever the message says.
 */
const BODY_REFUSALS: Record<string, string> = {
  'entity.parse.failed': 'The request body is not valid JSON.',
  'entity.too.large': 'The request body is too large.',
  'parameters.too.many': 'The request body is too large.',
  'encoding.unsupported':
    'The request body has a Content-Encoding this server does not support; send it uncompressed (or gzip, deflate, br).',
  'charset.unsupported': 'The charset of the request body is not supported; send UTF-8.',
  'request.aborted': 'The request body was not received completely.',
  'request.size.invalid': 'The request body does not have the size its Content-Length announced.',
};

/**
 * A body parser's refusal, as thrown or as Nest's Express adapter hands it on (an HttpException whose
 * `cause` is the original error).
 */
function bodyRefusal(error: unknown): { status: number; type: string } | undefined {
  const parserError = (e: unknown) => {
    const candidate = e as { status?: unknown; statusCode?: unknown; type?: unknown } | null;
    const status = candidate?.status ?? candidate?.statusCode;
    return typeof candidate === 'object' &&
      candidate !== null &&
      typeof candidate.type === 'string' &&
      typeof status === 'number' &&
      status >= 400 &&
      status < 500
      ? { status, type: candidate.type }
      : undefined;
  };
  return parserError(error) ?? (error instanceof HttpException ? parserError(error.cause) : undefined);
}

/** Translates anything thrown while handling a request into problem+json; internals never leak. */
export function toProblem(
  error: unknown,
  requestId: string | undefined,
): {
  problem: ProblemDocument;
  headers: Record<string, string>;
} {
  if (isDependencyFailure(error) && !(error instanceof AppError)) {
    error = new DependencyError(
      'A backing service is unavailable. Try again shortly.',
      'dependency_unavailable',
      error,
    );
  }
  if (isBadPathEscape(error)) error = new ValidationError(BAD_PATH_ESCAPE);
  if (isValueTooLong(error) && !(error instanceof AppError)) {
    // Backstop behind the DTOs' length checks: the client sent too long a value, which is a 400 whatever
    // the validator missed (PostgreSQL refused it, so nothing was stored).
    error = new ValidationError('A value is longer than its field allows.');
  }
  const refusal = bodyRefusal(error);
  if (refusal && !(error instanceof AppError)) {
    const detail = BODY_REFUSALS[refusal.type] ?? buildProblem(refusal.status, '', requestId).title + '.';
    return { problem: buildProblem(refusal.status, detail, requestId), headers: {} };
  }
  if (error instanceof AppError) {
    return {
      problem: buildProblem(error.status, error.message, requestId, {
        title: error.title,
        code: error.code,
        extensions: error.extensions,
      }),
      headers: error.headers,
    };
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const body = error.getResponse();
    let detail = typeof body === 'string' ? body : ((body as { message?: unknown }).message ?? error.message);
    if (Array.isArray(detail)) detail = detail.join('; ');
    if (status === 404) detail = new NotFoundError('No route or resource matches this request.').message;
    return {
      problem: buildProblem(status, status >= 500 ? 'Internal server error.' : String(detail), requestId),
      headers: {},
    };
  }
  // body-parser and other Express-level errors carry a status/statusCode and an `expose` flag.
  const httpish = error as {
    status?: number;
    statusCode?: number;
    expose?: boolean;
    type?: string;
    message?: string;
  };
  const status = httpish?.status ?? httpish?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500 && httpish.expose !== false) {
    const detail =
      httpish.type === 'entity.parse.failed'
        ? 'The request body is not valid JSON.'
        : httpish.type === 'entity.too.large'
          ? 'The request body is too large.'
          : (httpish.message ?? 'Bad request.');
    return { problem: buildProblem(status, detail, requestId), headers: {} };
  }
  return { problem: buildProblem(500, 'An unexpected error occurred.', requestId), headers: {} };
}

@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  catch(error: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request & { id?: string }>();
    const res = ctx.getResponse<Response>();
    // A signed-link request from an address over its limit was let through to prove its token: a refusal
    // answers the address's 429 instead (requestRateLimitMiddleware).
    const held: unknown = res.locals?.[HELD_IP_BLOCK];
    const refusal = toProblem(error, req.id);
    const { problem, headers } =
      held instanceof AppError && refusal.problem.status >= 400 && refusal.problem.status < 500
        ? toProblem(held, req.id)
        : refusal;
    if (isValueTooLong(error) && !(error instanceof AppError)) {
      // Answered as a 400, but a DTO lacks a length check that matches its column: worth a look.
      this.logger.warn(
        { err: error, request_id: req.id },
        'value too long for its column reached the database',
      );
    }
    if (problem.status >= 500) {
      this.logger.error(
        { err: error, request_id: req.id, status: problem.status, code: problem.code },
        'request failed',
      );
    }
    sendProblem(res, problem, headers);
  }
}
