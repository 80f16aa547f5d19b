import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { ConflictError, NotFoundError } from '../../common/errors/app-error.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../infra/prisma/unit-of-work.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import type { User } from '../../generated/prisma/client.js';
import { AuditService, systemActor, userActor, webhookActor } from '../audit/audit.service.js';
import { WebhookInboxRepository } from '../webhooks/webhook-inbox.repository.js';
import { UsersRepository } from './users.repository.js';

const DAY_MS = 86_400_000;
export const HARD_DELETE_ACTOR = systemActor('account-deletion');

export type DeletionVia = 'api' | 'identity_webhook';

export interface DeletionJob {
  userId: string;
  /** The deleted_at this job belongs to; a restore (or a later, new request) makes it stale. */
  deletedAt: string;
}

export interface SoftDeleteResult {
  /** false when the account was already scheduled for deletion (nothing changed). */
  changed: boolean;
  deletedAt: Date;
  hardDeleteAfter: Date;
}

export interface HardDeleteRun {
  deleted: number;
  failed: string[];
}

/**
 * Account deletion (spec "Account deletion"): a request soft-deletes with a grace period, within which
 * the user may restore; the daily job then erases the row, writing `user.hard_deleted` first, in the same
 * transaction, so the entry exists exactly when the deletion happened. Cascades and SET NULL rules of the
 * schema do the rest.
 */
@Injectable()
export class AccountDeletionService {
  private readonly logger = new Logger(AccountDeletionService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly users: UsersRepository,
    private readonly webhookArchive: WebhookInboxRepository,
    private readonly audit: AuditService,
    private readonly outbox: OutboxService,
    private readonly uow: UnitOfWork,
  ) {}

  get graceMs(): number {
    return this.config.retention.accountDeletionGraceDays * DAY_MS;
  }

  /** DELETE /account/me. */
  async requestDeletion(user: User): Promise<{ deletedAt: Date; hardDeleteAfter: Date }> {
    const result = await this.uow.run((tx) => this.softDelete(tx, user.id, 'api'));
    if (!result) throw new NotFoundError('The user does not exist.', 'user_not_found');
    return { deletedAt: result.deletedAt, hardDeleteAfter: result.hardDeleteAfter };
  }

  /**
   * The soft delete inside the caller's unit of work (the identity webhook's); its job is pushed when that
   * unit commits. Returns null when the user does not exist.
   */
  async softDelete(tx: Tx, userId: string, via: DeletionVia): Promise<SoftDeleteResult | null> {
    const user = await this.users.lockById(tx, userId);
    if (!user) return null;
    if (user.deletedAt) {
      if (via === 'identity_webhook' && user.deletedVia !== via) {
        // The user asked first, then the provider deleted the identity: restoring is no longer theirs.
        await this.users.update(tx, user.id, { deletedVia: via });
      }
      return {
        changed: false,
        deletedAt: user.deletedAt,
        hardDeleteAfter: new Date(user.deletedAt.getTime() + this.graceMs),
      };
    }
    const deletedAt = new Date();
    const hardDeleteAfter = new Date(deletedAt.getTime() + this.graceMs);
    await this.users.update(tx, user.id, { deletedAt, deletedVia: via });
    await this.audit.record(tx, {
      actor: via === 'api' ? userActor(user.identityUserId) : webhookActor('identity'),
      action: 'user.deletion_requested',
      userId: user.identityUserId,
      resourceType: 'user',
      resourceId: user.id,
      details: {
        via,
        deleted_at: deletedAt.toISOString(),
        hard_delete_after: hardDeleteAfter.toISOString(),
      },
    });
    const job: DeletionJob = { userId: user.id, deletedAt: deletedAt.toISOString() };
    await this.outbox.add(
      tx,
      JOBS.accountDeletionRequested,
      job,
      `deletion-requested-${user.id}-${deletedAt.getTime()}`,
    );
    return { changed: true, deletedAt, hardDeleteAfter };
  }

  /**
   * POST /account/me/restore: within the grace period only; restoring an active account is a no-op. A
   * deletion the identity provider made (`user.deleted`) is not the user's to undo: the identity is gone
   * there, and a token issued before it (or a stale session) must not bring the account back.
   */
  async restore(actor: User): Promise<void> {
    await this.prisma.$transaction(async (tx) => {
      const user = await this.users.lockById(tx, actor.id);
      if (!user) throw new NotFoundError('The user does not exist.', 'user_not_found');
      if (!user.deletedAt) return;
      if (user.deletedVia === 'identity_webhook') {
        throw new ConflictError(
          'This account was deleted at the identity provider and cannot be restored here.',
          'deleted_by_identity_provider',
        );
      }
      if (Date.now() - user.deletedAt.getTime() >= this.graceMs) {
        throw new ConflictError(
          'The grace period is over; this account is being erased and cannot be restored.',
          'restore_window_closed',
        );
      }
      await this.users.update(tx, user.id, { deletedAt: null, deletedVia: null });
      await this.audit.record(tx, {
        actor: userActor(user.identityUserId),
        action: 'user.restored',
        userId: user.identityUserId,
        resourceType: 'user',
        resourceId: user.id,
        details: { deleted_at: user.deletedAt.toISOString() },
      });
    });
  }

  /** The user a deletion job is about, or null when the job is stale (restored, erased, re-requested). */
  async pendingDeletion(job: DeletionJob): Promise<User | null> {
    const user = await this.users.findById(this.prisma, job.userId);
    if (!user?.deletedAt || user.deletedAt.toISOString() !== job.deletedAt) return null;
    return user;
  }

  /**
   * Erases every account soft-deleted for the grace period or longer, one user per transaction: lock the
   * next due row (SKIP LOCKED, so several workers share the work), audit `user.hard_deleted`, delete. A
   * crash loses at most the current user's transaction, which the next run redoes. A user whose deletion
   * fails is left for the next run; the run then fails so the job is retried and the failure is visible.
   */
  async hardDeleteDue(now = new Date(), maxUsers = 10_000): Promise<HardDeleteRun> {
    const cutoff = new Date(now.getTime() - this.graceMs);
    const failed: string[] = [];
    let deleted = 0;
    while (deleted + failed.length < maxUsers) {
      const current: { id: string | null } = { id: null };
      try {
        const outcome = await this.prisma.$transaction(
          async (tx) => {
            // Cascades over a heavy user may outlast the API's statement timeout.
            await tx.$executeRaw`SET LOCAL statement_timeout = '10min'`;
            const due = await this.users.lockNextDueForHardDelete(tx, cutoff, failed);
            if (!due) return 'done' as const;
            current.id = due.id;
            await this.audit.record(tx, {
              actor: HARD_DELETE_ACTOR,
              action: 'user.hard_deleted',
              userId: due.identity_user_id,
              resourceType: 'user',
              resourceId: due.id,
              details: { deleted_at: due.deleted_at.toISOString() },
            });
            await this.webhookArchive.scrubIdentityArchive(tx, due.identity_user_id);
            // Before the delete: its cascade removes the e-mail log rows that tie the events to the user.
            await this.webhookArchive.scrubEmailArchive(tx, await this.users.emailTrailOf(tx, due.id));
            // Before the delete too: its cascade removes the subscriptions that name the user's customers.
            await this.webhookArchive.scrubBillingArchive(
              tx,
              await this.users.exclusiveBillingCustomersOf(tx, due.id),
              now,
            );
            await this.users.hardDelete(tx, due.id);
            return 'deleted' as const;
          },
          { timeout: 15 * 60_000 },
        );
        if (outcome === 'done') break;
        deleted += 1;
      } catch (err) {
        if (current.id === null) throw err;
        failed.push(current.id);
        this.logger.error(
          { err: (err as Error).message, user_id: current.id },
          'hard delete of a user failed',
        );
      }
    }
    if (failed.length > 0) {
      throw new Error(`hard delete failed for ${failed.length} user(s) (${deleted} deleted); retrying later`);
    }
    return { deleted, failed };
  }
}
