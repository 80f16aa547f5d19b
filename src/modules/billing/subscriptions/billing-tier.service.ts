import { Injectable } from '@nestjs/common';
import type { Tx } from '../../../infra/prisma/prisma.service.js';
import { BillingCatalog, FREE_TIER } from '../billing.catalog.js';
import { BillingUsersRepository, type LockedUser } from './billing-users.repository.js';
import { SubscriptionsRepository } from './subscriptions.repository.js';
import { type AccessFields, grantsAccess } from './subscription-snapshot.js';

export interface TierChange {
  previous: string;
  current: string;
  changed: boolean;
}

/**
 * Derives users.current_tier from the user's subscriptions. Called only by billing webhook handlers
 * and the subscription-expiry job (spec rule 3), with the user row locked by the caller.
 */
@Injectable()
export class BillingTierService {
  constructor(
    private readonly catalog: BillingCatalog,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly users: BillingUsersRepository,
  ) {}

  /**
   * The tier after an event changed `subscription` (one of the user's), re-reading the user's
   * subscriptions only when the answer can differ (issue 15 item 3). When the subscription grants, at
   * `now`, exactly the paid tier the user holds, the best tier is still that one: the stored tier was the
   * best of all subscriptions when it was last derived, every change to a subscription derives it again,
   * and time only takes access away. Renewals and other updates of a single-subscription user (the bulk
   * of the webhook traffic) so skip one statement.
   */
  async afterChange(
    tx: Tx,
    user: LockedUser,
    subscription: AccessFields & { tier: string },
    now: Date,
  ): Promise<TierChange> {
    const unchanged =
      subscription.tier === user.current_tier &&
      subscription.tier !== FREE_TIER &&
      this.catalog.bestTier([subscription.tier]) === subscription.tier &&
      grantsAccess(subscription, now);
    if (unchanged) return { previous: user.current_tier, current: user.current_tier, changed: false };
    return this.recompute(tx, user, now);
  }

  async recompute(tx: Tx, user: LockedUser, now: Date): Promise<TierChange> {
    const tiers = await this.subscriptions.accessTiers(tx, user.id, now);
    const current = this.catalog.bestTier(tiers);
    const changed = current !== user.current_tier;
    if (changed) await this.users.setCurrentTier(tx, user.id, current);
    return { previous: user.current_tier, current, changed };
  }
}
