import { Injectable } from '@nestjs/common';
import { ValidationError } from '../../common/errors/app-error.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { UsersRepository } from '../users/users.repository.js';
import { UnsubscribeTokens } from './unsubscribe-tokens.js';

export const UNSUBSCRIBE_SOURCE = 'unsubscribe_link';

/** The unsubscribe link: the signed token is the only authentication. */
@Injectable()
export class UnsubscribeService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly tokens: UnsubscribeTokens,
    private readonly users: UsersRepository,
    private readonly audit: AuditService,
  ) {}

  /** The user id behind an authentic token; a missing, malformed or tampered token is a 400. */
  check(token: unknown): string {
    const userId = typeof token === 'string' ? this.tokens.verify(token) : null;
    if (!userId) {
      throw new ValidationError(
        'The unsubscribe link is invalid.',
        [{ field: 't', message: 'missing, malformed or tampered token' }],
        'invalid_unsubscribe_token',
      );
    }
    return userId;
  }

  /**
   * Withdraws marketing consent. Idempotent: a second click (or a user who already opted out, or whose
   * account is gone) changes nothing and still succeeds, so the link never reveals account state.
   */
  async unsubscribe(token: unknown): Promise<{ changed: boolean }> {
    const userId = this.check(token);
    const at = new Date();
    return this.prisma.$transaction(async (tx) => {
      const user = await this.users.withdrawMarketingConsent(tx, userId, UNSUBSCRIBE_SOURCE, at);
      if (!user) return { changed: false };
      await this.audit.record(tx, {
        actor: userActor(user.identityUserId),
        action: 'email.unsubscribed',
        userId: user.identityUserId,
        resourceType: 'user',
        resourceId: user.id,
        details: { source: UNSUBSCRIBE_SOURCE, consent_given: false, consent_at: at.toISOString() },
      });
      return { changed: true };
    });
  }
}
