import { Injectable } from '@nestjs/common';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import type { User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { UsersRepository } from './users.repository.js';

export type CreatedVia = 'identity_webhook' | 'token';

@Injectable()
export class UsersService {
  constructor(
    private readonly prisma: PrismaService,
    private readonly users: UsersRepository,
    private readonly audit: AuditService,
    private readonly outbox: OutboxService,
  ) {}

  /** The principal's row (every authenticated request): one statement on the driver. */
  findByIdentityId(identityUserId: string): Promise<User | null> {
    return this.users.findPrincipal(this.prisma, identityUserId);
  }

  /**
   * The one way a user row comes to exist: inserted if absent, and only then audited (`user.created`)
   * and handed to the post-signup hooks through the outbox. Pass `tx` to join the caller's transaction
   * (the identity webhook); the caller then dispatches the returned outbox ids after commit.
   */
  async ensureUser(
    input: {
      identityUserId: string;
      email: string;
      /** Whether the identity provider verified `email` (JIT creation only happens from a verified claim). */
      emailVerified: boolean;
      via: CreatedVia;
      /** The identity provider's version of the user (identity events older than it are not applied). */
      identityUpdatedAt?: Date | null;
    },
    tx?: Tx,
  ): Promise<{ user: User; created: boolean; outboxIds: string[] }> {
    const work = async (db: Tx) => {
      const { user, inserted } = await this.users.insertIfAbsent(
        db,
        input.identityUserId,
        input.email,
        input.emailVerified,
        input.identityUpdatedAt ?? null,
      );
      if (!inserted) return { user, created: false, outboxIds: [] as string[] };
      await this.audit.record(db, {
        actor: input.via === 'token' ? userActor(input.identityUserId) : 'webhook:identity',
        action: 'user.created',
        userId: user.identityUserId,
        resourceType: 'user',
        resourceId: user.id,
        details: { created_via: input.via },
      });
      const outboxId = await this.outbox.add(
        db,
        JOBS.postSignup,
        { userId: user.id },
        `post-signup-${user.id}`,
      );
      return { user, created: true, outboxIds: [outboxId] };
    };
    if (tx) return work(tx);
    const result = await this.prisma.$transaction(work);
    await this.outbox.dispatch(result.outboxIds);
    return result;
  }

  markEmailVerified(user: User): Promise<void> {
    return this.users.markEmailVerified(this.prisma, user.id, user.email);
  }

  touchLastActive(user: User): Promise<void> | void {
    if (user.lastActiveAt && Date.now() - user.lastActiveAt.getTime() < 3600_000) return;
    return this.users.touchLastActive(this.prisma, user.id);
  }
}
