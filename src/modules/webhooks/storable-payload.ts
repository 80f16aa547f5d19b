import { isUtf8 } from 'node:buffer';
import { jsonTextProblem } from '../../common/validation/unicode.js';

/** Deeper than any provider event; PostgreSQL's jsonb parser recurses per level and has a stack limit. */
export const MAX_PAYLOAD_DEPTH = 64;

/**
 * Why a parsed webhook body cannot be archived in a jsonb column, or null when it can. PostgreSQL refuses
 * NUL characters (`\u0000`) and unpaired surrogates in jsonb and overflows on very deep nesting: each would
 * fail the insert (a 500 the provider retries forever), so the receivers answer 400 and store nothing.
 */
export function unstorablePayload(value: unknown): string | null {
  const problem = jsonTextProblem(value, { maxDepth: MAX_PAYLOAD_DEPTH });
  if (!problem) return null;
  if (problem.kind === 'nul') return 'the body contains NUL characters';
  if (problem.kind === 'lone_surrogate') return 'the body contains unpaired UTF-16 surrogates';
  return `the body is nested deeper than ${MAX_PAYLOAD_DEPTH} levels`;
}

/**
 * unstorablePayload for a body parsed from `bytes`, which must also be UTF-8: Buffer#toString decodes each
 * invalid sequence as U+FFFD, so the archive would hold, and the handlers apply, something the provider
 * never sent (two ids differing only in invalid bytes would read as one).
 */
export function unstorableBody(bytes: Buffer, parsed: unknown): string | null {
  if (!isUtf8(bytes)) return 'the body is not valid UTF-8';
  return unstorablePayload(parsed);
}
