import { Injectable } from '@nestjs/common';
import { ValidationError } from '../../common/errors/app-error.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { UsersRepository } from '../users/users.repository.js';
import { type ConfirmationClaims, UnsubscribeTokens } from './unsubscribe-tokens.js';

export const DOUBLE_OPT_IN_SOURCE = 'double_opt_in';

/**
 * Double opt-in (MARKETING_DOUBLE_OPT_IN): marketing consent asked for in the profile is given only when
 * the signed link of the `confirm_subscription` e-mail is POSTed (the GET page only asks, so link
 * scanners confirm nothing). The link is an HMAC token like the unsubscribe one, valid 7 days. The user's
 * latest decision wins: a link issued before the consent was last withdrawn (by any source) is stale and
 * is refused as an expired one is, on GET and POST, changing and recording nothing.
 */
@Injectable()
export class SubscriptionConfirmService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly tokens: UnsubscribeTokens,
    private readonly consent: UsersRepository,
    private readonly audit: AuditService,
  ) {}

  /**
   * The user id behind an authentic, unexpired confirmation token that no later withdrawal voided; anything
   * else is a 400 (the same one for each, so a link never tells why).
   */
  async check(token: unknown, now = new Date()): Promise<string> {
    const claims = this.claims(token, now);
    if (await this.consent.withdrawnAfter(this.prisma, claims.userId, claims.issuedAt)) throw invalidLink();
    return claims.userId;
  }

  /**
   * Gives marketing consent with source `double_opt_in` (consent history row, audit `email.subscribed`).
   * Idempotent: a second POST (or a user who is subscribed already, or whose account is gone) changes
   * nothing and still succeeds. A link issued before the latest withdrawal changes nothing and is a 400.
   */
  async confirm(token: unknown): Promise<{ changed: boolean }> {
    const now = new Date();
    const { userId, issuedAt } = this.claims(token, now);
    const outcome = await this.prisma.$transaction(async (tx) => {
      const user = await this.consent.grantMarketingConsent(tx, userId, DOUBLE_OPT_IN_SOURCE, now, {
        requestedAt: issuedAt,
      });
      if (!user) return { changed: false, stale: await this.consent.withdrawnAfter(tx, userId, issuedAt) };
      await this.audit.record(tx, {
        actor: userActor(user.identityUserId),
        action: 'email.subscribed',
        userId: user.identityUserId,
        resourceType: 'user',
        resourceId: user.id,
        details: { source: DOUBLE_OPT_IN_SOURCE, consent_given: true, consent_at: now.toISOString() },
      });
      return { changed: true, stale: false };
    });
    if (outcome.stale) throw invalidLink();
    return { changed: outcome.changed };
  }

  private claims(token: unknown, now: Date): ConfirmationClaims {
    const claims = typeof token === 'string' ? this.tokens.confirmation(token, now) : null;
    if (!claims) throw invalidLink();
    return claims;
  }
}

/** Invalid, tampered, expired, or issued before the latest withdrawal of consent: one answer for all. */
const invalidLink = () =>
  new ValidationError(
    'The confirmation link is invalid or has expired.',
    [{ field: 't', message: 'missing, malformed, tampered or expired token' }],
    'invalid_confirmation_token',
  );
