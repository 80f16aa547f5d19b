import { Injectable } from '@nestjs/common';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import type { User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { WebhookInboxRepository } from '../webhooks/webhook-inbox.repository.js';
import { UsersRepository } from './users.repository.js';

export type CreatedVia = 'identity_webhook' | 'token';

export interface EnsureUserInput {
  identityUserId: string;
  email: string;
  /** Whether the identity provider verified `email` (JIT creation only happens from a verified claim). */
  emailVerified: boolean;
  via: CreatedVia;
  /** The identity provider's version of the user (identity events older than it are not applied). */
  identityUpdatedAt?: Date | null;
}

@Injectable()
export class UsersService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly users: UsersRepository,
    private readonly audit: AuditService,
    private readonly outbox: OutboxService,
    private readonly uow: UnitOfWork,
    private readonly archive: WebhookInboxRepository,
  ) {}

  /** The principal's row (every authenticated request): one statement on the driver. */
  findByIdentityId(identityUserId: string): Promise<User | null> {
    return this.users.findPrincipal(this.prisma, identityUserId);
  }

  /**
   * The one way a user row comes to exist: inserted if absent, and only then audited (`user.created`)
   * and handed to the post-signup hooks through the outbox, inside the caller's unit of work (the
   * identity webhook); the hooks are pushed when that unit commits.
   */
  async ensureUser(tx: Tx, input: EnsureUserInput): Promise<{ user: User; created: boolean }> {
    const { user, inserted } = await this.users.insertIfAbsent(
      tx,
      input.identityUserId,
      input.email,
      input.emailVerified,
      input.identityUpdatedAt ?? null,
    );
    if (!inserted) return { user, created: false };
    await this.audit.record(tx, {
      actor: input.via === 'token' ? userActor(input.identityUserId) : 'webhook:identity',
      action: 'user.created',
      userId: user.identityUserId,
      resourceType: 'user',
      resourceId: user.id,
      details: { created_via: input.via },
    });
    await this.outbox.add(tx, JOBS.postSignup, { userId: user.id }, `post-signup-${user.id}`);
    return { user, created: true };
  }

  /**
   * ensureUser as its own unit of work: the just-in-time creation from a token issued at `issuedAt`. Null,
   * and nothing written, when the identity provider deleted the identity at or after that time: a token
   * lives on for minutes after the deletion, which erased the row or found none (a user.deleted delivered
   * before user.created), and must not bring the person back. Only a missing row gets here, so the
   * archive look-up (and the identity's lock) never runs on a normal authenticated request. The identity's
   * lock, taken first and held to the commit, keeps a user.deleted applied meanwhile from missing the row
   * this inserts (IdentityWebhookService.deleted takes it too, before it reads the row).
   */
  ensureUserStandalone(
    input: EnsureUserInput,
    issuedAt: Date,
  ): Promise<{ user: User; created: boolean } | null> {
    return this.uow.run(async (tx) => {
      await this.users.lockIdentity(tx, input.identityUserId);
      if (await this.deletedByProviderSince(tx, input.identityUserId, issuedAt)) return null;
      return this.ensureUser(tx, input);
    });
  }

  /**
   * The deletion guard, for every path that would create the row (the identity webhook's user.created and
   * user.updated, a token just in time): true when the webhook archive holds a `user.deleted` of this
   * identity user (not FAILED) whose event time is at or after `version`, the moment the provider vouched
   * for the user (the event's version, the token's iat). Equal times count as not newer. The caller holds
   * the identity's lock (lockIdentity).
   */
  async deletedByProviderSince(tx: Tx, identityUserId: string, version: Date): Promise<boolean> {
    const deletedAt = await this.archive.latestIdentityDeletion(tx, identityUserId);
    return deletedAt !== null && version.getTime() <= deletedAt.getTime();
  }

  markEmailVerified(user: User): Promise<void> {
    return this.users.markEmailVerified(this.prisma, user.id, user.email);
  }

  touchLastActive(user: User): Promise<void> | void {
    if (user.lastActiveAt && Date.now() - user.lastActiveAt.getTime() < 3600_000) return;
    return this.users.touchLastActive(this.prisma, user.id);
  }
}
