import { Injectable, type OnModuleInit } from '@nestjs/common';
import { UserHooks } from '../users/user-hooks.js';
import { BillingActionsService } from './actions/billing-actions.service.js';

/** Billing's reaction to user lifecycle events (runs in the worker, after the change committed). */
@Injectable()
export class BillingHooks implements OnModuleInit {
  constructor(
    private readonly hooks: UserHooks,
    private readonly billing: BillingActionsService,
  ) {}

  onModuleInit(): void {
    // A deleted account must not go on being charged: cancel at the provider now. The webhook that
    // follows downgrades the tier; the hook is idempotent for a retried job.
    this.hooks.on('deletion_requested', 'cancel-subscription', async (user) => {
      await this.billing.cancelForAccountDeletion(user);
    });
  }
}
