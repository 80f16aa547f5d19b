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

/**
 * How long a double opt-in link stays valid after its issue time, and so how its issue time is read back:
 * its expiry less this (the token carries no issue time of its own, so that links stay readable by the
 * previous release during a rolling deploy or after a rollback). Changing it moves the issue time of the
 * links already in mailboxes: a change needs the issue time signed first, in a release of its own.
 */
export const CONFIRM_TOKEN_TTL_MS = 7 * 86_400_000;

/**
 * How far a request's clock may run ahead of the signer's, and the least validity a link sent late keeps
 * (a job delayed by days is issued at most this before the end of its 7 days).
 */
const CONFIRM_CLOCK_SLACK_MS = 86_400_000;

/** An authentic, unexpired confirmation link: whom it names and when it was issued. */
export interface ConfirmationClaims {
  userId: string;
  issuedAt: Date;
}

/**
 * HMAC-SHA256 tokens keyed by EMAIL_UNSUBSCRIBE_SECRET: `<payload>.<mac>`, both base64url, payload
 * `{u: user id, p: purpose, e?: expiry in epoch ms}` (`e` on confirmation links only, which were issued
 * CONFIRM_TOKEN_TTL_MS before it). The token is the only
 * authentication of the unsubscribe and confirm routes; the purpose is signed, so one link cannot serve as
 * the other.
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
    return this.claims(token, purpose, now)?.u ?? null;
  }

  /**
   * An authentic, unexpired confirmation token's user id and issue time (its expiry less
   * CONFIRM_TOKEN_TTL_MS), else null.
   */
  confirmation(token: string, now = new Date()): ConfirmationClaims | null {
    const body = this.claims(token, 'confirm', now);
    if (!body) return null;
    return { userId: body.u, issuedAt: new Date(body.e! - CONFIRM_TOKEN_TTL_MS) };
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
   * The double opt-in link of the confirm_subscription e-mail, issued when the user asked for it
   * (`requestedAt`, by the API's clock, within CONFIRM_CLOCK_SLACK_MS of this one's either way) and valid
   * CONFIRM_TOKEN_TTL_MS from then: a consent withdrawn after that request voids the link
   * (SubscriptionConfirmService).
   */
  confirmUrl(userId: string, now = new Date(), requestedAt: Date = now): string {
    const issuedAt = Math.min(
      Math.max(requestedAt.getTime(), now.getTime() - CONFIRM_TOKEN_TTL_MS + CONFIRM_CLOCK_SLACK_MS),
      now.getTime() + CONFIRM_CLOCK_SLACK_MS,
    );
    const token = this.sign(userId, 'confirm', new Date(issuedAt + CONFIRM_TOKEN_TTL_MS));
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
