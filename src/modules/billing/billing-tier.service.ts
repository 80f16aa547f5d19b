import { Injectable } from '@nestjs/common';
import type { Tx } from '../../infra/prisma/prisma.service.js';
import { BillingCatalog } from './billing.catalog.js';
import { BillingUsersRepository, type LockedUser } from './billing-users.repository.js';
import { SubscriptionsRepository } from './subscriptions.repository.js';

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

  async recompute(tx: Tx, user: LockedUser, now: Date): Promise<TierChange> {
    const tiers = await this.subscriptions.accessTiers(tx, user.id, now);
    const current = this.catalog.bestTier(tiers);
    const changed = current !== user.current_tier;
    if (changed) await this.users.setCurrentTier(tx, user.id, current);
    return { previous: user.current_tier, current, changed };
  }
}
