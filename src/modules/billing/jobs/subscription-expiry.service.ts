import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { AuditService, systemActor } from '../../audit/audit.service.js';
import { BillingTierService } from '../subscriptions/billing-tier.service.js';
import { BillingUsersRepository } from '../subscriptions/billing-users.repository.js';
import {
  type LapsedSubscription,
  SubscriptionsRepository,
} from '../subscriptions/subscriptions.repository.js';

const BATCH = 200;

/**
 * The hourly subscription job. It downgrades what has lapsed: a CANCELED subscription whose paid period is
 * over. PAUSED and PAST_DUE keep their tier until the provider cancels them (state table). It also applies
 * a tier change whose period end has passed when no renewal event did it first. Each subscription is
 * handled in its own transaction under the same locks as the webhooks, and re-checked there, so a webhook
 * that changed it a moment earlier wins.
 */
@Injectable()
export class SubscriptionExpiryService {
  private readonly logger = new Logger(SubscriptionExpiryService.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly users: BillingUsersRepository,
    private readonly tiers: BillingTierService,
    private readonly audit: AuditService,
  ) {}

  async expireLapsed(now: Date = new Date()): Promise<{ expired: number; tier_changes: number }> {
    const tierChanges = await this.sweep(
      (after) => this.subscriptions.dueTierChanges(this.prisma, now, { after, limit: BATCH }),
      (candidate) => this.applyTierChange(candidate, now),
    );
    const expired = await this.sweep(
      (after) => this.subscriptions.lapsed(this.prisma, now, { after, limit: BATCH }),
      (candidate) => this.expireOne(candidate, now),
    );
    if (expired > 0 || tierChanges > 0) {
      this.logger.log({ expired, tier_changes: tierChanges }, 'subscription job applied changes');
    }
    return { expired, tier_changes: tierChanges };
  }

  /** Runs `one` for every candidate, page by page in id order (a row that stays a candidate is not retried). */
  private async sweep(
    find: (after: string | undefined) => Promise<LapsedSubscription[]>,
    one: (candidate: LapsedSubscription) => Promise<boolean>,
  ): Promise<number> {
    let done = 0;
    let after: string | undefined;
    for (;;) {
      const candidates = await find(after);
      for (const candidate of candidates) {
        if (await one(candidate)) done += 1;
      }
      if (candidates.length < BATCH) return done;
      after = candidates[candidates.length - 1].id;
    }
  }

  private expireOne(candidate: LapsedSubscription, now: Date): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await this.subscriptions.lock(tx, candidate.provider_subscription_id);
      const [row] = await this.subscriptions.lapsed(tx, now, { id: candidate.id });
      if (!row) return false;
      const user = await this.users.lock(tx, row.user_id);
      if (!user) return false;
      const subscription = await this.subscriptions.markExpired(tx, row.id, now);
      const tier = await this.tiers.recompute(tx, user, now);
      await this.audit.record(tx, {
        actor: systemActor('subscription-expiry'),
        action: 'subscription.expired',
        userId: user.identity_user_id,
        resourceType: 'subscription',
        resourceId: row.id,
        details: {
          subscription_id: subscription.providerSubscriptionId,
          status: subscription.status,
          reason: 'canceled_period_ended',
          tier: tier.current,
          previous_tier: tier.previous,
        },
      });
      return true;
    });
  }

  private applyTierChange(candidate: LapsedSubscription, now: Date): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await this.subscriptions.lock(tx, candidate.provider_subscription_id);
      const user = await this.users.lock(tx, candidate.user_id);
      if (!user) return false;
      const changed = await this.subscriptions.applyPendingTier(tx, candidate.id, now);
      if (!changed) return false;
      const subscription = changed.row;
      const tier = await this.tiers.recompute(tx, user, now);
      await this.audit.record(tx, {
        actor: systemActor('subscription-expiry'),
        action: 'subscription.tier_changed',
        userId: user.identity_user_id,
        resourceType: 'subscription',
        resourceId: subscription.id,
        details: {
          subscription_id: subscription.providerSubscriptionId,
          status: subscription.status,
          reason: 'scheduled_change_due',
          subscription_tier: subscription.tier,
          previous_subscription_tier: changed.previousTier,
          tier: tier.current,
          previous_tier: tier.previous,
        },
      });
      return true;
    });
  }
}
