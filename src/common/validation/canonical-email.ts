/**
 * The form in which e-mail addresses are compared for privileges (the admin allowlist): printable ASCII
 * only, ASCII letters lower-cased, nothing else touched. No Unicode case folding or normalisation, so a
 * look-alike such as `\u212A` (KELVIN SIGN, which `toLowerCase()` turns into `k`) never equals an ASCII
 * address. Null for anything else (non-ASCII, spaces, control characters, empty).
 */
export function canonicalEmail(value: string): string | null {
  if (!/^[\x21-\x7e]+$/.test(value)) return null;
  return value.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}
