import { isUtf8 } from 'node:buffer';
import { hasLoneSurrogate } from '../../common/validation/unicode.js';

/** Deeper than any provider event; PostgreSQL's jsonb parser recurses per level and has a stack limit. */
export const MAX_PAYLOAD_DEPTH = 64;

/**
 * Why a parsed webhook body cannot be archived in a jsonb column, or null when it can. PostgreSQL refuses
 * NUL characters (`\u0000`) and unpaired surrogates in jsonb and overflows on very deep nesting: each would
 * fail the insert (a 500 the provider retries forever), so the receivers answer 400 and store nothing.
 */
export function unstorablePayload(value: unknown): string | null {
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 0 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (typeof node === 'string') {
      if (node.includes('\u0000')) return 'the body contains NUL characters';
      if (hasLoneSurrogate(node)) return 'the body contains unpaired UTF-16 surrogates';
      continue;
    }
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= MAX_PAYLOAD_DEPTH) return `the body is nested deeper than ${MAX_PAYLOAD_DEPTH} levels`;
    for (const [key, child] of Object.entries(node)) {
      if (key.includes('\u0000')) return 'the body contains NUL characters';
      if (hasLoneSurrogate(key)) return 'the body contains unpaired UTF-16 surrogates';
      stack.push({ node: child, depth: depth + 1 });
    }
  }
  return null;
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
