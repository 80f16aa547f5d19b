import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { AuditService, systemActor } from '../audit/audit.service.js';
import { BillingTierService } from './billing-tier.service.js';
import { BillingUsersRepository } from './billing-users.repository.js';
import { SubscriptionsRepository } from './subscriptions.repository.js';

const BATCH = 200;
const DAY_MS = 86_400_000;

const REASONS: Record<string, string> = {
  CANCELED: 'canceled_period_ended',
  PAST_DUE: 'past_due_grace_elapsed',
  PAUSED: 'paused_grace_elapsed',
};

/**
 * The hourly subscription-expiry job: downgrades what has lapsed (canceled with the paid period over;
 * past_due or paused beyond BILLING_LAPSE_GRACE_DAYS). Each subscription is handled in its own
 * transaction under the same locks as the webhooks, and re-checked there, so a webhook that revived it
 * a moment earlier wins.
 */
@Injectable()
export class SubscriptionExpiryService {
  private readonly logger = new Logger(SubscriptionExpiryService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly users: BillingUsersRepository,
    private readonly tiers: BillingTierService,
    private readonly audit: AuditService,
  ) {}

  async expireLapsed(now: Date = new Date()): Promise<{ expired: number }> {
    const cutoff = new Date(now.getTime() - this.config.billing.lapseGraceDays * DAY_MS);
    let expired = 0;
    for (;;) {
      const candidates = await this.subscriptions.lapsed(this.prisma, now, cutoff, { limit: BATCH });
      for (const candidate of candidates) {
        if (await this.expireOne(candidate.id, candidate.provider_subscription_id, now, cutoff)) expired += 1;
      }
      // Every candidate either expired or was revived, so the next query makes progress.
      if (candidates.length < BATCH) break;
    }
    if (expired > 0) this.logger.log({ expired }, 'lapsed subscriptions downgraded');
    return { expired };
  }

  private expireOne(id: string, providerSubscriptionId: string, now: Date, cutoff: Date): Promise<boolean> {
    return this.prisma.$transaction(async (tx) => {
      await this.subscriptions.lock(tx, providerSubscriptionId);
      const [row] = await this.subscriptions.lapsed(tx, now, cutoff, { id });
      if (!row) return false;
      const user = await this.users.lock(tx, row.user_id);
      if (!user) return false;
      const subscription = await this.subscriptions.markExpired(tx, id, now);
      const tier = await this.tiers.recompute(tx, user, now);
      await this.audit.record(tx, {
        actor: systemActor('subscription-expiry'),
        action: 'subscription.expired',
        userId: user.identity_user_id,
        resourceType: 'subscription',
        resourceId: id,
        details: {
          subscription_id: subscription.providerSubscriptionId,
          status: subscription.status,
          reason: REASONS[subscription.status] ?? 'lapsed',
          tier: tier.current,
          previous_tier: tier.previous,
        },
      });
      return true;
    });
  }
}
