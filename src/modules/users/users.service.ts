import { Injectable } from '@nestjs/common';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import type { User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
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

  /** ensureUser as its own unit of work (just-in-time creation from a token). */
  ensureUserStandalone(input: EnsureUserInput): Promise<{ user: User; created: boolean }> {
    return this.uow.run((tx) => this.ensureUser(tx, input));
  }

  markEmailVerified(user: User): Promise<void> {
    return this.users.markEmailVerified(this.prisma, user.id, user.email);
  }

  touchLastActive(user: User): Promise<void> | void {
    if (user.lastActiveAt && Date.now() - user.lastActiveAt.getTime() < 3600_000) return;
    return this.users.touchLastActive(this.prisma, user.id);
  }
}
