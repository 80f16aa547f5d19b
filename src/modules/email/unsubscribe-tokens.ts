import { Injectable } from '@nestjs/common';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../../config/app-config.js';

/** `marketing`: the unsubscribe link; `confirm`: the double opt-in link (expires). */
export type UnsubscribePurpose = 'marketing' | 'confirm';

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
   * The user id when the token is authentic, of this purpose and not expired at `now`, else null
   * (constant-time comparison).
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
    try {
      const body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
        u?: unknown;
        p?: unknown;
        e?: unknown;
      };
      if (body.e !== undefined && (typeof body.e !== 'number' || body.e <= now.getTime())) return null;
      // A confirmation link must carry its expiry.
      if (purpose === 'confirm' && body.e === undefined) return null;
      return typeof body.u === 'string' && body.p === purpose ? body.u : null;
    } catch {
      return null;
    }
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
