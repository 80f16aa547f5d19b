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
 * The validity of the confirmation links signed before they carried their issue time (`i`): every one
 * was valid 7 days, so such a link was issued at its expiry less this. Fixed, whatever CONFIRM_TOKEN_TTL_MS
 * becomes: it describes links already in mailboxes.
 */
const LEGACY_CONFIRM_TTL_MS = 7 * 86_400_000;

/** An authentic, unexpired confirmation link: whom it names and when it was issued. */
export interface ConfirmationClaims {
  userId: string;
  issuedAt: Date;
}

/**
 * HMAC-SHA256 tokens keyed by EMAIL_UNSUBSCRIBE_SECRET: `<payload>.<mac>`, both base64url, payload
 * `{u: user id, p: purpose, e?: expiry in epoch ms, i?: issue time in epoch ms}` (`e` and `i` on
 * confirmation links only; links signed before `i` existed have none). The token is the only
 * authentication of the unsubscribe and confirm routes; the purpose is signed, so one link cannot serve as
 * the other.
 */
@Injectable()
export class UnsubscribeTokens {
  constructor(private readonly config: AppConfig) {}

  sign(userId: string, purpose: UnsubscribePurpose = 'marketing', expiresAt?: Date, issuedAt?: Date): string {
    const body = {
      u: userId,
      p: purpose,
      ...(expiresAt ? { e: expiresAt.getTime() } : {}),
      ...(issuedAt ? { i: issuedAt.getTime() } : {}),
    };
    const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /**
   * The user id when the token is authentic, well formed, of this purpose and not expired at `now`, else
   * null (constant-time comparison).
   */
  verify(token: string, purpose: UnsubscribePurpose = 'marketing', now = new Date()): string | null {
    return this.claims(token, purpose, now)?.u ?? null;
  }

  /**
   * An authentic, unexpired confirmation token's user id and issue time, else null. The issue time is the
   * signed `i`; a link signed before `i` existed was issued LEGACY_CONFIRM_TTL_MS before its expiry.
   */
  confirmation(token: string, now = new Date()): ConfirmationClaims | null {
    const body = this.claims(token, 'confirm', now);
    if (!body) return null;
    return { userId: body.u, issuedAt: new Date(body.i ?? body.e! - LEGACY_CONFIRM_TTL_MS) };
  }

  private claims(token: string, purpose: UnsubscribePurpose, now: Date): Claims | null {
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
    return body;
  }

  url(userId: string): string {
    return `${this.config.email.publicBaseUrl}/api/v1/email/unsubscribe?t=${this.sign(userId)}`;
  }

  /**
   * The double opt-in link of the confirm_subscription e-mail, valid CONFIRM_TOKEN_TTL_MS from `now`. Its
   * issue time is when the user asked for it (`requestedAt`, by the API's clock: not moved to this one's,
   * only kept within the expiry so the link verifies): a consent withdrawn after that request voids the
   * link (SubscriptionConfirmService).
   */
  confirmUrl(userId: string, now = new Date(), requestedAt: Date = now): string {
    const expiresAt = new Date(now.getTime() + CONFIRM_TOKEN_TTL_MS);
    const issuedAt = new Date(Math.min(requestedAt.getTime(), expiresAt.getTime()));
    const token = this.sign(userId, 'confirm', expiresAt, issuedAt);
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
  i?: number;
}

/**
 * The payload of an authentic token when it has the shape `sign` writes, else null. A signature only says
 * the secret's holder wrote the payload, not that it is one of ours: a user id that is not a UUID would
 * reach PostgreSQL's uuid column and fail there (a 500), so a bad payload counts as a bad token.
 */
function claimsOf(payload: string): Claims | null {
  const body = base64urlJsonObject(payload);
  if (!body) return null;
  const { u, p, e, i, ...rest } = body;
  if (Object.keys(rest).length > 0 || !isUuid(u)) return null;
  if (typeof p !== 'string' || !PURPOSES.includes(p)) return null;
  if (e !== undefined && !(Number.isSafeInteger(e) && (e as number) > 0 && (e as number) <= MAX_DATE_MS)) {
    return null;
  }
  // The issue time: a confirmation link's, with its expiry, not after it.
  if (
    i !== undefined &&
    !(
      p === 'confirm' &&
      e !== undefined &&
      Number.isSafeInteger(i) &&
      (i as number) > 0 &&
      (i as number) <= (e as number)
    )
  ) {
    return null;
  }
  return {
    u,
    p: p as UnsubscribePurpose,
    ...(e !== undefined ? { e: e as number } : {}),
    ...(i !== undefined ? { i: i as number } : {}),
  };
}
