import { Injectable } from '@nestjs/common';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../../config/app-config.js';

export type UnsubscribePurpose = 'marketing';

/**
 * HMAC-SHA256 unsubscribe tokens keyed by EMAIL_UNSUBSCRIBE_SECRET: `<payload>.<mac>`, both base64url,
 * payload `{u: user id, p: purpose}`. The token is the only authentication of the unsubscribe route.
 */
@Injectable()
export class UnsubscribeTokens {
  constructor(private readonly config: AppConfig) {}

  sign(userId: string, purpose: UnsubscribePurpose = 'marketing'): string {
    const payload = Buffer.from(JSON.stringify({ u: userId, p: purpose })).toString('base64url');
    return `${payload}.${this.mac(payload)}`;
  }

  /** The user id when the token is authentic, else null (constant-time comparison). */
  verify(token: string, purpose: UnsubscribePurpose = 'marketing'): string | null {
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
      };
      return typeof body.u === 'string' && body.p === purpose ? body.u : null;
    } catch {
      return null;
    }
  }

  url(userId: string): string {
    return `${this.config.email.publicBaseUrl}/api/v1/email/unsubscribe?t=${this.sign(userId)}`;
  }

  private mac(payload: string, secret = this.config.email.unsubscribeSecret): string {
    if (!secret) throw new Error('EMAIL_UNSUBSCRIBE_SECRET is not configured');
    return createHmac('sha256', secret).update(payload).digest('base64url');
  }
}
