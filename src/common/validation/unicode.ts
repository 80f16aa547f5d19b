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
