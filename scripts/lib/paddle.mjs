// Paddle's webhook signature, from its documentation: `Paddle-Signature: ts=<unix seconds>;h1=<hex>` with
// h1 = HMAC-SHA256(secret, `${ts}:${raw body}`).
import { createHmac } from 'node:crypto';

export function paddleSignature(secret, timestamp, rawBody) {
  return createHmac('sha256', secret).update(`${timestamp}:`).update(rawBody).digest('hex');
}
