import { isUtf8 } from 'node:buffer';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * True when the string holds a UTF-16 surrogate without its pair. JSON can carry one (`"\ud800"`), but
 * PostgreSQL's jsonb refuses it, so values bound for jsonb are checked (String#isWellFormed, without
 * raising the compile target to ES2024).
 */
export const hasLoneSurrogate = (value: string): boolean => LONE_SURROGATE.test(value);

const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/**
 * The string with each unpaired surrogate replaced by U+FFFD, as encoding it to UTF-8 does (a text
 * parameter of a statement): for a text value that travels inside JSON, which jsonb would refuse.
 */
export const wellFormed = (value: string): string => value.replace(LONE_SURROGATES, '\uFFFD');

/**
 * Whether JSON text may decode to a string with an unpaired surrogate: only a `\uD800`-`\uDFFF` escape can
 * produce one (valid UTF-8 encodes no surrogate), so text without such an escape needs no walk of its
 * parsed value. A match (a surrogate pair written as two escapes, or an escaped backslash before `ud8..`)
 * only means the parsed value is walked.
 */
export const mayHoldLoneSurrogate = (json: string): boolean => /\\u[dD][89a-fA-F]/.test(json);

/** What PostgreSQL cannot store of a parsed JSON value (jsonTextProblem): a NUL, an unpaired surrogate, depth. */
export interface JsonTextProblem {
  kind: 'nul' | 'lone_surrogate' | 'too_deep';
  /** The dotted path of the value or key (as the validation pipe names fields), its keys made well-formed. */
  field: string;
}

interface JsonWalkStep {
  node: unknown;
  /** The object level the node stands at (the value itself at 1). */
  depth: number;
  parent: JsonWalkStep | null;
  key: string;
}

const fieldOf = (step: JsonWalkStep | null, key?: string): string => {
  const keys = key === undefined ? [] : [key];
  for (let at = step; at?.parent; at = at.parent) keys.unshift(at.key);
  return keys.map(wellFormed).join('.');
};

/**
 * The first string value or key of a parsed JSON value holding an unpaired surrogate (or, unless `nul` is
 * false, a NUL), or an object nested deeper than `maxDepth` levels, or null: what jsonb and text columns
 * refuse (a 500 at the insert) or PostgreSQL's recursive jsonb parser overflows on. One iterative walk for
 * every caller (the JSON body check, the webhook archive, the owned JSON fields); the path is only built
 * for the answer.
 */
export function jsonTextProblem(
  value: unknown,
  { nul = true, maxDepth = Number.POSITIVE_INFINITY }: { nul?: boolean; maxDepth?: number } = {},
): JsonTextProblem | null {
  const bad = (text: string): JsonTextProblem['kind'] | null =>
    nul && text.includes('\u0000') ? 'nul' : hasLoneSurrogate(text) ? 'lone_surrogate' : null;
  const stack: JsonWalkStep[] = [{ node: value, depth: 1, parent: null, key: '' }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    const { node, depth } = step;
    if (typeof node === 'string') {
      const kind = bad(node);
      if (kind) return { kind, field: fieldOf(step) };
      continue;
    }
    if (typeof node !== 'object' || node === null) continue;
    if (depth > maxDepth) return { kind: 'too_deep', field: fieldOf(step) };
    for (const [key, child] of Object.entries(node)) {
      const kind = bad(key);
      if (kind) return { kind, field: fieldOf(step, key) };
      stack.push({ node: child, depth: depth + 1, parent: step, key });
    }
  }
  return null;
}

const UNSTORABLE = new RegExp(`\\u0000|${LONE_SURROGATE.source}`, 'g');

/**
 * The string with each character PostgreSQL can store in neither text nor jsonb written as a JSON-style
 * escape: NUL as `\u0000`, an unpaired surrogate as `\ud800`..`\udfff` (lower-case hex, as JSON.stringify
 * writes one). Every other character is kept, so a storable string comes back unchanged. Deterministic
 * but not reversible (a string may hold the escape text itself): for a value that only identifies
 * something in a trace (a refused delivery's event id), next to a digest of the exact bytes.
 */
export const storableText = (value: string): string =>
  value.replace(UNSTORABLE, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * The first `max` UTF-16 code units of the string, one fewer when the cut would split a surrogate pair:
 * String#slice can leave half an emoji, an unpaired surrogate that jsonb refuses (the whole insert fails).
 */
export function clipText(value: string, max: number): string {
  if (value.length <= max) return value;
  const code = value.charCodeAt(max - 1);
  return value.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

const isHexDigit = (code: number): boolean =>
  (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);

/**
 * The first run of `%XX` escapes in URL-encoded text (a query string, a form body) whose bytes are not UTF-8,
 * with where it starts, or null. A run must be UTF-8 on its own: the literal character that ends it cannot
 * complete a sequence the run left open (a continuation byte is only ever written as an escape). `%FF`,
 * `%C3%28`, an encoded surrogate (`%ED%A0%80`), a sequence cut short (`%E2%82`) and an overlong form
 * (`%C0%AF`) are refused by `buffer.isUtf8`; node:querystring decodes them as U+FFFD and qs keeps them as
 * the escape text. A `%` without two hex digits is no escape: both parsers keep it as text.
 */
export function invalidPercentEscape(text: string): { at: number; escape: string } | null {
  let at = text.indexOf('%');
  while (at !== -1) {
    const start = at;
    const bytes: number[] = [];
    while (
      text.charCodeAt(at) === 0x25 &&
      isHexDigit(text.charCodeAt(at + 1)) &&
      isHexDigit(text.charCodeAt(at + 2))
    ) {
      bytes.push(parseInt(text.slice(at + 1, at + 3), 16));
      at += 3;
    }
    if (bytes.some((byte) => byte >= 0x80) && !isUtf8(Uint8Array.from(bytes))) {
      return { at: start, escape: text.slice(start, at) };
    }
    at = text.indexOf('%', at === start ? at + 1 : at);
  }
  return null;
}
