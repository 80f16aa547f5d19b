import { z } from 'zod';
import { UnauthenticatedError } from '../../common/errors/app-error.js';
import { base64urlJsonObject } from '../../common/validation/base64url-json.js';
import { hasLoneSurrogate } from '../../common/validation/unicode.js';

/** Clock leeway for exp, nbf and iat (DESIGN section 4). */
export const CLOCK_LEEWAY_SECONDS = 5;
/** The identity user id's bounds, as for identity webhooks. */
const MAX_SUBJECT_LENGTH = 200;
const MAX_EMAIL_LENGTH = 320;
/** C0, DEL, C1 and the Unicode line/paragraph separators: never part of an id or an address. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const emailAddress = z.email();
/**
 * U+FFFD: what a payload's invalid UTF-8 bytes decode to (jsonwebtoken reads it with Buffer#toString), so
 * two subjects of different bytes would read as one. No identity provider's id holds it.
 */
const REPLACEMENT = '\uFFFD';

export interface CheckedClaims {
  sub: string;
  /** The token's e-mail address, validated; null when the token has none. */
  email: string | null;
  /** The identity provider vouches for `email` (`email_verified: true`, the boolean). */
  emailVerified: boolean;
  azp: string | null;
  /** When the identity provider issued the token (`iat`, whole seconds). */
  issuedAt: Date;
}

const invalid = (detail: string) => new UnauthenticatedError(detail, 'invalid_token');

/**
 * The claims of a token whose signature, issuer, audience, exp and nbf jsonwebtoken already checked:
 * exp and iat are required, iat may not lie in the future and the token is refused once it is older than
 * `maxAgeSeconds` (whatever its exp says); sub and email must be short strings without control
 * characters, unpaired surrogates or U+FFFD (a surrogate is stored as U+FFFD and invalid UTF-8 bytes are
 * decoded to it: two different subjects would name one account),
 * email a syntactically valid address. Anything else is a 401, never a stored oddity.
 */
export function checkClaims(
  payload: Record<string, unknown>,
  maxAgeSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): CheckedClaims {
  const { exp, iat, sub, email, email_verified: emailVerified, azp } = payload;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) throw invalid('The token has no expiry (exp).');
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw invalid('The token has no issue time (iat).');
  if (iat > nowSeconds + CLOCK_LEEWAY_SECONDS) throw invalid('The token claims to be issued in the future.');
  if (nowSeconds - iat > maxAgeSeconds + CLOCK_LEEWAY_SECONDS) {
    throw new UnauthenticatedError('The token is older than the accepted maximum age.', 'token_expired');
  }
  if (sub === undefined || sub === null || sub === '') throw invalid('The token has no subject.');
  if (
    typeof sub !== 'string' ||
    sub.length > MAX_SUBJECT_LENGTH ||
    CONTROL.test(sub) ||
    hasLoneSurrogate(sub) ||
    sub.includes(REPLACEMENT) ||
    sub.trim() !== sub
  ) {
    throw invalid('The token subject is invalid.');
  }
  let address: string | null = null;
  if (email !== undefined && email !== null) {
    if (
      typeof email !== 'string' ||
      email.length > MAX_EMAIL_LENGTH ||
      CONTROL.test(email) ||
      hasLoneSurrogate(email) ||
      !emailAddress.safeParse(email).success
    ) {
      throw invalid('The token e-mail claim is not a valid address.');
    }
    address = email;
  }
  if (azp !== undefined && typeof azp !== 'string') throw invalid('The token was issued for another party.');
  return {
    sub,
    email: address,
    emailVerified: address !== null && emailVerified === true,
    azp: (azp as string | undefined) ?? null,
    issuedAt: new Date(iat * 1000),
  };
}

/**
 * The protected header of a compact JWS, decoded without trusting it (the signature is checked later
 * against the key it names). Null when it is not one.
 */
export function tokenHeader(token: string): Record<string, unknown> | null {
  const [header] = token.split('.');
  return header ? base64urlJsonObject(header) : null;
}

/**
 * The payload of a compact JWS when it is a JSON object (a claims set, RFC 7519 section 7.2), decoded
 * without trusting it (the signature is checked later); null for anything else (`null`, a number, a
 * string, an array, not JSON).
 */
export function tokenPayload(token: string): Record<string, unknown> | null {
  const payload = token.split('.')[1];
  return payload ? base64urlJsonObject(payload) : null;
}
