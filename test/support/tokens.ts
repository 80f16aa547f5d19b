import { createHmac } from 'node:crypto';

/**
 * `base64url(JSON).base64url(HMAC-SHA256)`, the shape of our unsubscribe and checkout tokens, over any
 * payload: an authentic token whose claims `sign`/`issue` would never write (a user id that is not a UUID,
 * a NUL, a lone surrogate, an expiry out of range), as only a holder of the secret could make one.
 */
export function signedToken(payload: unknown, secret: string): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}
