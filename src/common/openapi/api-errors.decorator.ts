import { applyDecorators } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import type { ErrorCodeOf, ErrorStatus } from '../errors/error-codes.js';

/** The one error schema (RFC 9457 problem+json); its definition lives in app/openapi.ts. */
export const PROBLEM_SCHEMA_REF = '#/components/schemas/ProblemDetails';

/**
 * The operation extension each documented code travels in, `x-problem:<status>:<order>:<code>`, until the
 * document builder (app/openapi.ts) turns them into the operation's responses and removes them. One key per
 * code, so decorators on the controller and on the route add up instead of replacing each other's entry for
 * a status; `order` keeps the codes in the order they were written (decorators are evaluated top down).
 */
export const PROBLEM_EXTENSION_PREFIX = 'x-problem:';

let written = 0;

/** Per status, the codes a route answers with it (from ERROR_CODES) and when. */
export type ApiErrorMap = { [S in ErrorStatus]?: { [C in ErrorCodeOf<S>]?: string } };

/**
 * The error answers of a route, code by code: `@ApiErrors({ 409: { no_active_subscription: 'nothing to
 * cancel' } })`. The compiler only takes codes registered under their status in ERROR_CODES (the list the
 * error classes throw from); each status becomes one `application/problem+json` response whose description
 * names every code (`code: when; code: when`) and whose `x-problem-codes` lists them. The authentication
 * guard's 401s, 403 `account_deleted` and 503s (secured routes), 429 (rate-limited routes), 400
 * `validation_failed` (routes whose body or query a DTO validates) and what the HTTP layer refuses before a
 * route runs (400 `validation_failed`/`bad_request`, 413, 415) are added by the document builder to every
 * operation they apply to, so list them only to say something more specific (the route's explanation wins).
 * Name only codes the route can answer: follow its throws.
 */
export const ApiErrors = (errors: ApiErrorMap) =>
  applyDecorators(
    ...Object.entries(errors).flatMap(([status, codes]) =>
      Object.entries((codes ?? {}) as Record<string, string>).map(([code, explanation]) =>
        ApiExtension(`${PROBLEM_EXTENSION_PREFIX}${status}:${written++}:${code}`, explanation),
      ),
    ),
  );
