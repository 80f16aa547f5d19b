import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { AppConfig } from '../../../config/app-config.js';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../../infra/prisma/unit-of-work.js';
import type { Subscription } from '../../../generated/prisma/client.js';
import { AuditService, systemActor } from '../../audit/audit.service.js';
import { BillingApiClient, BillingRejectedError } from '../billing-api.client.js';
import { PADDLE_UNSET_DATE, subscriptionSchema } from '../intake/billing-events.schema.js';
import { SubscriptionStateService } from '../subscriptions/subscription-state.service.js';
import {
  type LapsedSubscription,
  SubscriptionsRepository,
} from '../subscriptions/subscriptions.repository.js';

const BATCH = 200;
const WEEK_MS = 7 * 86_400_000;

/** The event a provider state stands for (the state table fixes the status of these). */
const EVENT_OF_STATUS: Record<string, string> = {
  active: 'subscription.updated',
  trialing: 'subscription.updated',
  past_due: 'subscription.past_due',
  paused: 'subscription.paused',
  canceled: 'subscription.canceled',
};

const updatedAtSchema = z.looseObject({ updated_at: z.string().nullish() });

/** The columns compared to name what the reconciliation changed. */
const WATCHED = ['status', 'tier', 'currentPeriodEnd', 'canceledAt', 'pausedAt', 'priceId'] as const;
const FIELD_NAMES: Record<(typeof WATCHED)[number], string> = {
  status: 'status',
  tier: 'tier',
  currentPeriodEnd: 'current_period_end',
  canceledAt: 'canceled_at',
  pausedAt: 'paused_at',
  priceId: 'price_id',
};

/**
 * Issue 17 item 2: the hourly drift check. A subscription that should have renewed (ACTIVE/TRIALING past
 * its period end by BILLING_DRIFT_GRACE_MINUTES with no event since) or a PAST_DUE/PAUSED one untouched for
 * a week is read back from the provider. When the provider's state is newer it goes through the same state
 * machine as a synthetic event `reconcile:<subscription id>:<provider updated_at>` (newer-wins makes a repeat
 * a no-op; a synthetic event never grants credits) and is audited `billing.reconciled` with what changed.
 */
@Injectable()
export class BillingDriftService {
  private readonly logger = new Logger(BillingDriftService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly api: BillingApiClient,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly state: SubscriptionStateService,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
  ) {}

  async check(now: Date = new Date()): Promise<{ checked: number; reconciled: number; reason?: string }> {
    if (!this.config.billing.backfillEnabled) return { checked: 0, reconciled: 0, reason: 'not_configured' };
    const renewalCutoff = new Date(now.getTime() - this.config.billing.driftGraceMinutes * 60_000);
    const staleBefore = new Date(now.getTime() - WEEK_MS);
    let checked = 0;
    let reconciled = 0;
    let after: string | undefined;
    for (;;) {
      const candidates = await this.subscriptions.drifting(this.prisma, renewalCutoff, staleBefore, {
        after,
        limit: BATCH,
      });
      for (const candidate of candidates) {
        checked += 1;
        // A provider outage throws: the job fails and retries later; nothing was changed.
        if (await this.reconcile(candidate, now)) reconciled += 1;
      }
      if (candidates.length < BATCH) break;
      after = candidates[candidates.length - 1].id;
    }
    if (reconciled > 0) this.logger.log({ checked, reconciled }, 'billing drift corrected');
    return { checked, reconciled };
  }

  private async reconcile(candidate: LapsedSubscription, now: Date): Promise<boolean> {
    let entity: unknown;
    try {
      entity = await this.api.subscription(candidate.provider_subscription_id);
    } catch (err) {
      // The provider refused this one (e.g. 404 for a subscription it no longer knows): skip it, not the run.
      if (!(err instanceof BillingRejectedError)) throw err;
      this.logger.warn(
        { subscription_id: candidate.provider_subscription_id, provider_status: err.providerStatus },
        'drift check: the provider refused to show this subscription',
      );
      return false;
    }
    const data = subscriptionSchema.safeParse(entity);
    if (!data.success || data.data.id !== candidate.provider_subscription_id) {
      this.logger.warn(
        { subscription_id: candidate.provider_subscription_id },
        'provider subscription unreadable',
      );
      return false;
    }
    const stamp = updatedAtSchema.safeParse(entity);
    const raw = stamp.success ? stamp.data.updated_at : null;
    const updatedAt =
      raw && !PADDLE_UNSET_DATE.test(raw) && !Number.isNaN(Date.parse(raw)) ? new Date(raw) : now;
    const event = {
      eventId: `reconcile:${candidate.provider_subscription_id}:${updatedAt.toISOString()}`,
      eventType: EVENT_OF_STATUS[data.data.status],
      occurredAt: updatedAt,
      data: entity,
    };
    return this.uow.run(async (tx) => {
      const before = await this.subscriptions.findByProviderId(tx, candidate.provider_subscription_id);
      await this.state.handle(tx, event);
      const after = await this.subscriptions.findByProviderId(tx, candidate.provider_subscription_id);
      const fields = before && after ? changedFields(before, after) : [];
      if (fields.length === 0 || !after) return false;
      await this.audit.record(tx, {
        actor: systemActor('billing-drift'),
        action: 'billing.reconciled',
        resourceType: 'subscription',
        resourceId: after.id,
        details: {
          subscription_id: after.providerSubscriptionId,
          event_id: event.eventId,
          fields_changed: fields,
          status: after.status,
          previous_status: before!.status,
          tier: after.tier,
        },
      });
      return true;
    });
  }
}

function changedFields(before: Subscription, after: Subscription): string[] {
  const same = (a: unknown, b: unknown) =>
    a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b;
  return WATCHED.filter((key) => !same(before[key], after[key]))
    .map((key) => FIELD_NAMES[key])
    .sort();
}
