import { Injectable } from '@nestjs/common';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../../config/app-config.js';
import { isUuid } from '../../common/validation/uuid.js';
import { base64urlJsonObject } from '../../common/validation/base64url-json.js';

/** `marketing`: the unsubscribe link; `confirm`: the double opt-in link (expires). */
export type UnsubscribePurpose = 'marketing' | 'confirm';

const PURPOSES: readonly string[] = ['marketing', 'confirm'] satisfies UnsubscribePurpose[];

/** The latest instant a Date can hold (epoch ms). */
const MAX_DATE_MS = 8.64e15;

/** How long a double opt-in link stays valid. */
export const CONFIRM_TOKEN_TTL_MS = 7 * 86_400_000;

/**
 * HMAC-SHA256 tokens keyed by EMAIL_UNSUBSCRIBE_SECRET: `<payload>.<mac>`, both base64url, payload
 * `{u: user id, p: purpose, e?: expiry in epoch ms}`. The token is the only authentication of the
 * unsubscribe and confirm routes; the purpose is signed, so one link cannot serve as the other.
 */
@Injectable()
export class UnsubscribeTokens {
  constructor(private readonly config: AppConfig) {}

  sign(userId: string, purpose: UnsubscribePurpose = 'marketing', expiresAt?: Date): string {
    const body = { u: userId, p: purpose, ...(expiresAt ? { e: expiresAt.getTime() } : {}) };
    const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /**
   * The user id when the token is authentic, well formed, of this purpose and not expired at `now`, else
   * null (constant-time comparison).
   */
  verify(token: string, purpose: UnsubscribePurpose = 'marketing', now = new Date()): string | null {
    const [payload, mac, extra] = token.split('.');
    if (!payload || !mac || extra !== undefined || payload.length > 512) return null;
    const given = Buffer.from(mac);
    // Links in mail sent before a key rotation keep working with the previous key.
    const secrets = [this.config.email.unsubscribeSecret, this.config.email.previousUnsubscribeSecret];
    const authentic = secrets.some((secret) => {
      if (!secret) return false;
      const expected = Buffer.from(this.mac(payload, secret));
      return expected.length === given.length && timingSafeEqual(expected, given);
    });
    if (!authentic) return null;
    const body = claimsOf(payload);
    if (!body || body.p !== purpose) return null;
    if (body.e !== undefined && body.e <= now.getTime()) return null;
    // A confirmation link must carry its expiry.
    if (purpose === 'confirm' && body.e === undefined) return null;
    return body.u;
  }

  url(userId: string): string {
    return `${this.config.email.publicBaseUrl}/api/v1/email/unsubscribe?t=${this.sign(userId)}`;
  }

  /** The double opt-in link of the confirm_subscription e-mail, valid CONFIRM_TOKEN_TTL_MS from `now`. */
  confirmUrl(userId: string, now = new Date()): string {
    const token = this.sign(userId, 'confirm', new Date(now.getTime() + CONFIRM_TOKEN_TTL_MS));
    return `${this.config.email.publicBaseUrl}/api/v1/email/confirm?t=${token}`;
  }

  private mac(payload: string, secret = this.config.email.unsubscribeSecret): string {
    if (!secret) throw new Error('EMAIL_UNSUBSCRIBE_SECRET is not configured');
    return createHmac('sha256', secret).update(payload).digest('base64url');
  }
}

interface Claims {
  u: string;
  p: UnsubscribePurpose;
  e?: number;
}

/**
 * The payload of an authentic token when it has the shape `sign` writes, else null. A signature only says
 * the secret's holder wrote the payload, not that it is one of ours: a user id that is not a UUID would
 * reach PostgreSQL's uuid column and fail there (a 500), so a bad payload counts as a bad token.
 */
function claimsOf(payload: string): Claims | null {
  const body = base64urlJsonObject(payload);
  if (!body) return null;
  const { u, p, e, ...rest } = body;
  if (Object.keys(rest).length > 0 || !isUuid(u)) return null;
  if (typeof p !== 'string' || !PURPOSES.includes(p)) return null;
  if (e !== undefined && !(Number.isSafeInteger(e) && (e as number) > 0 && (e as number) <= MAX_DATE_MS)) {
    return null;
  }
  return { u, p: p as UnsubscribePurpose, ...(e !== undefined ? { e: e as number } : {}) };
}
