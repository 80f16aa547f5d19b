import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';

/** The one error schema (RFC 9457 problem+json); its definition lives in app/openapi.ts. */
export const PROBLEM_SCHEMA_REF = '#/components/schemas/ProblemDetails';

export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503;

/**
 * The error answers of a route, in one line: `@ApiErrors({ 404: 'not_found: ...', 409: 'conflict: ...' })`.
 * Each becomes an `application/problem+json` response with the ProblemDetails schema; name the `code`s
 * the route can answer in the description. 401 (secured routes), 429 (rate-limited routes), 400 (routes with a
 * body or query) and what the HTTP layer refuses before a route runs (400 `validation_failed`/`bad_request`,
 * 413, 415) are added to every operation they apply to by the document builder (app/openapi.ts), merged code
 * by code into the route's own entries, so list them only to say something more specific.
 */
export const ApiErrors = (errors: Partial<Record<ErrorStatus, string>>) =>
  applyDecorators(
    ...Object.entries(errors).map(([status, description]) =>
      ApiResponse({
        status: Number(status),
        description,
        content: { 'application/problem+json': { schema: { $ref: PROBLEM_SCHEMA_REF } } },
      }),
    ),
  );
