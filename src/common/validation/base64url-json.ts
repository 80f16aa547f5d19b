/**
 * A base64url segment holding a JSON object (a JWS header, a signed token's payload), decoded without
 * trusting it; null when it is not one. The caller checks the members.
 */
export function base64urlJsonObject(segment: string): Record<string, unknown> | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : null;
}
