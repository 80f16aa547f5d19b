import { Injectable } from '@nestjs/common';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../../../config/app-config.js';
import { DependencyError } from '../../../common/errors/app-error.js';
import { base64urlJsonObject } from '../../../common/validation/base64url-json.js';
import { hasLoneSurrogate } from '../../../common/validation/unicode.js';
import { isUuid } from '../../../common/validation/uuid.js';

export interface CheckoutClaims {
  /** users.id of the buyer */
  userId: string;
  tier: string;
  expiresAt: Date;
  nonce: string;
}

export type CheckoutTokenCheck =
  { ok: true; claims: CheckoutClaims } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

/** Signature and structure only: whether we issued this token, whatever its age. */
export type CheckoutTokenAuthenticity =
  { ok: true; claims: CheckoutClaims } | { ok: false; reason: 'malformed' | 'bad_signature' };

interface WireClaims {
  u: string;
  t: string;
  exp: number;
  n: string;
}

const MAX_TOKEN_LENGTH = 1024;

/**
 * The tier claim: a configured tier name or `pack:<price id>` (packClaim). Tier names are not constrained by
 * the configuration, and a tier renamed since the checkout must not cut its buyer off, so only the shape is
 * checked: non-empty text of at most 256 characters, without control characters or unpaired surrogates.
 */
const MAX_TIER_CLAIM = 256;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** issue() writes 12 random bytes in base64url (16 characters). */
const NONCE = /^[A-Za-z0-9_-]{16,64}$/;
/** The last second a Date can hold (8.64e15 ms after the epoch). */
const MAX_EXP_SECONDS = 8.64e12;

/**
 * Signed checkout tokens: `base64url(json{u, t, exp, n}).base64url(HMAC-SHA256)`, keyed by the billing
 * webhook secret (the spec allows no separate secret). The frontend puts the token into the checkout's
 * custom_data; the provider echoes it in the signed subscription webhook, which is how a new
 * subscription is tied to its user without trusting any unsigned field.
 */
@Injectable()
export class CheckoutTokenService {
  constructor(private readonly config: AppConfig) {}

  issue(userId: string, tier: string, now: Date = new Date()): { token: string; expiresAt: Date } {
    const exp = Math.floor(now.getTime() / 1000) + this.config.billing.checkoutTokenTtlSeconds;
    const claims: WireClaims = { u: userId, t: tier, exp, n: randomBytes(12).toString('base64url') };
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return { token: `${body}.${this.sign(body).toString('base64url')}`, expiresAt: new Date(exp * 1000) };
  }

  /** Checks the signature, the structure and the expiry at `at`. */
  verify(token: string, at: Date = new Date()): CheckoutTokenCheck {
    const check = this.authenticate(token);
    if (check.ok && check.claims.expiresAt.getTime() <= at.getTime()) return { ok: false, reason: 'expired' };
    return check;
  }

  /**
   * Checks that we issued the token (current or previous secret) and that its claims are well formed,
   * but not its age. Subscription ownership relies on this alone: an authentic token can only bind a
   * subscription to the user it was issued to, and a customer who paid after the token expired (an
   * overlay left open) must not be cut off. The caller records the lateness.
   */
  authenticate(token: string): CheckoutTokenAuthenticity {
    if (token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: 'malformed' };
    const parts = token.split('.');
    if (parts.length !== 2 || !parts[0] || !parts[1]) return { ok: false, reason: 'malformed' };
    const [body, signature] = parts;
    const given = Buffer.from(signature, 'base64url');
    // Tokens minted before a secret rotation stay authentic while the previous secret is configured.
    const secrets = [this.config.billing.webhookSecret, this.config.billing.previousWebhookSecret];
    const authentic = secrets.some((secret) => {
      if (!secret) return false;
      const expected = this.sign(body, secret);
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
    if (!authentic) return { ok: false, reason: 'bad_signature' };
    const claims = wireClaimsOf(body);
    if (!claims) return { ok: false, reason: 'malformed' };
    return {
      ok: true,
      claims: { userId: claims.u, tier: claims.t, expiresAt: new Date(claims.exp * 1000), nonce: claims.n },
    };
  }

  private sign(body: string, secret = this.config.billing.webhookSecret): Buffer {
    if (!secret) throw new DependencyError('Billing is not configured.', 'billing_not_configured');
    return createHmac('sha256', secret).update(body).digest();
  }
}

/**
 * The claims of an authentic token when they have the shape issue() writes, else null. A valid signature
 * only says the secret's holder wrote the body: a user id that is not a UUID would fail PostgreSQL's uuid
 * column and an expiry past the Date range an `Invalid time value`, each on every retry of the worker, so
 * such a token is malformed (the event is SKIPPED `checkout_token_malformed` like any other bad token).
 */
function wireClaimsOf(body: string): WireClaims | null {
  const claims = base64urlJsonObject(body);
  if (!claims) return null;
  const { u, t, exp, n, ...rest } = claims;
  if (Object.keys(rest).length > 0 || !isUuid(u)) return null;
  if (typeof t !== 'string' || t.length === 0 || t.length > MAX_TIER_CLAIM) return null;
  if (CONTROL.test(t) || hasLoneSurrogate(t)) return null;
  if (typeof n !== 'string' || !NONCE.test(n)) return null;
  if (!Number.isSafeInteger(exp) || (exp as number) <= 0 || (exp as number) > MAX_EXP_SECONDS) return null;
  return { u, t, exp: exp as number, n };
}
