import { Injectable } from '@nestjs/common';
import { ValidationError } from '../../common/errors/app-error.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { UsersRepository } from '../users/users.repository.js';
import { UnsubscribeTokens } from './unsubscribe-tokens.js';

export const DOUBLE_OPT_IN_SOURCE = 'double_opt_in';

/**
 * Double opt-in (MARKETING_DOUBLE_OPT_IN): marketing consent asked for in the profile is given only when
 * the signed link of the `confirm_subscription` e-mail is POSTed (the GET page only asks, so link
 * scanners confirm nothing). The link is an HMAC token like the unsubscribe one, valid 7 days.
 */
@Injectable()
export class SubscriptionConfirmService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly tokens: UnsubscribeTokens,
    private readonly consent: UsersRepository,
    private readonly audit: AuditService,
  ) {}

  /** The user id behind an authentic, unexpired confirmation token; anything else is a 400. */
  check(token: unknown, now = new Date()): string {
    const userId = typeof token === 'string' ? this.tokens.verify(token, 'confirm', now) : null;
    if (!userId) {
      throw new ValidationError(
        'The confirmation link is invalid or has expired.',
        [{ field: 't', message: 'missing, malformed, tampered or expired token' }],
        'invalid_confirmation_token',
      );
    }
    return userId;
  }

  /**
   * Gives marketing consent with source `double_opt_in` (consent history row, audit `email.subscribed`).
   * Idempotent: a second POST (or a user who is subscribed already, or whose account is gone) changes
   * nothing and still succeeds.
   */
  async confirm(token: unknown): Promise<{ changed: boolean }> {
    const now = new Date();
    const userId = this.check(token, now);
    return this.prisma.$transaction(async (tx) => {
      const user = await this.consent.grantMarketingConsent(tx, userId, DOUBLE_OPT_IN_SOURCE, now);
      if (!user) return { changed: false };
      await this.audit.record(tx, {
        actor: userActor(user.identityUserId),
        action: 'email.subscribed',
        userId: user.identityUserId,
        resourceType: 'user',
        resourceId: user.id,
        details: { source: DOUBLE_OPT_IN_SOURCE, consent_given: true, consent_at: now.toISOString() },
      });
      return { changed: true };
    });
  }
}
