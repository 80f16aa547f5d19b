import { Injectable, Logger } from '@nestjs/common';
import { AppError, ConflictError, NotFoundError, ValidationError } from '../../../common/errors/app-error.js';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import type { Subscription, User } from '../../../generated/prisma/client.js';
import { AuditService, systemActor, userActor } from '../../audit/audit.service.js';
import type { AuditDetails } from '../../audit/audit.details.js';
import {
  BillingApiClient,
  BillingRejectedError,
  type EffectiveFrom,
  type ProviderSubscription,
} from '../billing-api.client.js';
import { BILLING_CYCLES, type BillingCycle } from '../../../config/project.config.js';
import { BillingCatalog, FREE_TIER } from '../billing.catalog.js';
import { CheckoutTokenService } from './checkout-token.service.js';
import {
  type BillingActionResponseDto,
  type CheckoutResponseDto,
  type CheckoutTokenResponseDto,
  type SubscriptionResponseDto,
  toActionResponse,
  toSubscriptionResponse,
} from './dto/billing-response.dto.js';
import { SubscriptionsRepository } from '../subscriptions/subscriptions.repository.js';

type Actor = { actor: string; userId: string | null };

const EVERY: Record<string, string> = { day: 'daily', week: 'weekly', month: 'monthly', year: 'yearly' };

/** `yearly`, `weekly`, `every-3-month` (BillingCatalog.cycleOf), or `matching` when unknown. */
const cycleName = (cycle: string | null): string => {
  if (cycle === null) return 'matching';
  const [interval, frequency] = cycle.split('*');
  if (frequency === undefined) return Object.hasOwn(EVERY, interval) ? EVERY[interval] : `every-${interval}`;
  return `every-${frequency}-${interval}`;
};

const cancelAlreadyScheduled = () =>
  new ConflictError(
    'Your subscription is already set to cancel at the end of the billing period.',
    'cancel_already_scheduled',
  );

/**
 * What a user can do about billing. Operations call the provider and change nothing locally: the
 * provider is the source of truth and its webhook moves our state (spec "Operation-driven moves").
 */
@Injectable()
export class BillingActionsService {
  private readonly logger = new Logger(BillingActionsService.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly catalog: BillingCatalog,
    private readonly tokens: CheckoutTokenService,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly api: BillingApiClient,
    private readonly audit: AuditService,
  ) {}

  /** One live subscription per user: the token is what a checkout opens a second one with. */
  async checkoutToken(user: User, tier: string, cycle?: BillingCycle): Promise<CheckoutTokenResponseDto> {
    const priceId = this.checkoutPrice(tier, cycle);
    await this.assertNoLiveSubscription(user);
    const { token, expiresAt } = this.tokens.issue(user.id, tier);
    return { token, expires_at: expiresAt.toISOString(), price_id: priceId };
  }

  async checkout(user: User, tier: string, cycle?: BillingCycle): Promise<CheckoutResponseDto> {
    const priceId = this.checkoutPrice(tier, cycle);
    await this.assertNoLiveSubscription(user);
    const { token, expiresAt } = this.tokens.issue(user.id, tier);
    return {
      price_id: priceId,
      customer_email: user.email,
      custom_data: { checkout_token: token },
      expires_at: expiresAt.toISOString(),
    };
  }

  async current(user: User): Promise<SubscriptionResponseDto> {
    const row = await this.subscriptions.findCurrentForUser(this.prisma, user.id);
    if (!row) throw new NotFoundError('You have no subscription.', 'no_subscription');
    return toSubscriptionResponse(row);
  }

  /**
   * A user can always stop paying. A paused or past_due subscription is canceled immediately whatever
   * was asked: a paused one has no billing period to run out (the provider accepts only an immediate
   * cancel for it), and a past_due one has an unpaid period that a cancel at its end would keep trying
   * to charge. Asking again for a cancel at period end that is already scheduled is a conflict.
   */
  async cancel(user: User, immediately: boolean): Promise<BillingActionResponseDto> {
    const row = await this.subscriptions.findLiveForUser(this.prisma, user.id);
    if (!row) throw new ConflictError('You have no active subscription to cancel.', 'no_active_subscription');
    const stopNow = immediately || row.status === 'PAUSED' || row.status === 'PAST_DUE';
    if (!stopNow) this.assertNoScheduledCancel(row);
    const effectiveFrom: EffectiveFrom = stopNow ? 'immediately' : 'next_billing_period';
    const provider = await this.requested(
      this.userActor(user),
      'billing.cancel_requested',
      row,
      {
        cancel_immediately: immediately,
        effective_from: effectiveFrom,
        tier: row.tier,
        previous_status: row.status,
      },
      () =>
        stopNow
          ? this.api.cancel(row.providerSubscriptionId, effectiveFrom)
          : this.cancelAtPeriodEnd(row.providerSubscriptionId),
    );
    return toActionResponse(row, 'cancel', provider, { effectiveFrom });
  }

  async change(user: User, targetTier: string): Promise<BillingActionResponseDto> {
    if (targetTier !== FREE_TIER && !this.catalog.isPurchasable(targetTier)) {
      throw new ValidationError(`Unknown tier ${targetTier}.`, [
        {
          field: 'target_tier',
          message: `target_tier must be one of ${[FREE_TIER, ...this.catalog.purchasableTiers()].join(', ')}`,
        },
      ]);
    }
    const row = await this.subscriptions.findLiveForUser(this.prisma, user.id);
    // The tier the provider bills next: a pending change counts as made (changing back to the tier still
    // in effect reverts it).
    if ((row ? (row.pendingTier ?? row.tier) : user.currentTier) === targetTier) {
      throw new ConflictError(`You are already on the ${targetTier} tier.`, 'same_tier');
    }
    if (!row) {
      throw new ConflictError(
        'You have no subscription that can be changed; start one through checkout.',
        'no_recoverable_subscription',
      );
    }
    // The spec moves an active subscription. The provider refuses price changes while a payment is past
    // due, and a paused subscription bills nothing to prorate: say which step comes first.
    if (row.status === 'PAUSED') {
      throw new ConflictError(
        'Your subscription is paused; resume it before changing the tier, or cancel it.',
        'subscription_paused',
      );
    }
    if (row.status === 'PAST_DUE') {
      throw new ConflictError(
        'A payment for your subscription is past due; update your payment method before changing the tier, or cancel it.',
        'subscription_past_due',
      );
    }
    const details = { tier: row.tier, target_tier: targetTier };
    if (targetTier === FREE_TIER) {
      this.assertNoScheduledCancel(row);
      const provider = await this.requested(
        this.userActor(user),
        'billing.change_requested',
        row,
        { ...details, effective_from: 'next_billing_period' },
        () => this.cancelAtPeriodEnd(row.providerSubscriptionId),
      );
      return toActionResponse(row, 'change', provider, { effectiveFrom: 'next_billing_period', targetTier });
    }
    // The new price bills the same cycle as the current one: a yearly subscriber stays yearly. Without
    // such a price, refuse before the provider is called rather than move the subscriber to another cycle.
    const cycle = this.catalog.cycleOf(row);
    const priceId = this.catalog.priceForCycle(targetTier, cycle);
    if (priceId === null) {
      const missing = this.catalog.cyclesUnnamed(targetTier)
        ? `The billing cycles of the ${targetTier} tier's prices are not configured (BILLING_PRICE_TIERS price:TIER:month|year), so no ${cycleName(cycle)} price can be chosen`
        : `The ${targetTier} tier has no ${cycleName(cycle)} price`;
      throw new ConflictError(
        `${missing}, and a change keeps the billing cycle of your subscription.`,
        'no_price_for_cycle',
      );
    }
    const provider = await this.requested(
      this.userActor(user),
      'billing.change_requested',
      row,
      { ...details, price_id: priceId, billing_cycle: cycle },
      () => this.api.changePrice(row.providerSubscriptionId, priceId, row.quantity),
    );
    return toActionResponse(row, 'change', provider, { targetTier });
  }

  async resume(user: User): Promise<BillingActionResponseDto> {
    const row = await this.subscriptions.findLiveForUser(this.prisma, user.id);
    if (!row || row.status !== 'PAUSED') {
      throw new ConflictError('You have no paused subscription to resume.', 'not_paused');
    }
    const provider = await this.requested(
      this.userActor(user),
      'billing.resume_requested',
      row,
      { effective_from: 'immediately', tier: row.tier },
      () => this.api.resume(row.providerSubscriptionId),
    );
    return toActionResponse(row, 'resume', provider, { effectiveFrom: 'immediately' });
  }

  /**
   * Account deletion: stop billing now for every live subscription. Idempotent for a retried job: one
   * that is already canceled at the provider counts as done.
   */
  async cancelForAccountDeletion(user: User): Promise<number> {
    const rows = await this.subscriptions.findAllLiveForUser(this.prisma, user.id);
    const actor = { actor: systemActor('account-deletion'), userId: user.identityUserId };
    for (const row of rows) {
      await this.requested(
        actor,
        'billing.cancel_requested',
        row,
        { cancel_immediately: true, effective_from: 'immediately', reason: 'account_deletion' },
        async () => {
          try {
            return await this.api.cancel(row.providerSubscriptionId, 'immediately');
          } catch (err) {
            if (!(err instanceof BillingRejectedError)) throw err;
            const state = await this.api.get(row.providerSubscriptionId);
            if (state.status !== 'canceled') throw err;
            return state;
          }
        },
      );
    }
    return rows.length;
  }

  /**
   * A second subscription would bill the user twice (ACTIVE, TRIALING, PAST_DUE or PAUSED, not expired):
   * changes go through /subscription/change.
   */
  private async assertNoLiveSubscription(user: User): Promise<void> {
    if (await this.subscriptions.findLiveForUser(this.prisma, user.id)) {
      throw new ConflictError(
        'You already have a subscription; use /billing/subscription/change.',
        'subscription_exists',
      );
    }
  }

  /** The row's scheduled change is the provider's, synced by the last webhook. */
  private assertNoScheduledCancel(row: Subscription): void {
    const scheduled = row.scheduledChange as { action?: unknown } | null;
    if (scheduled?.action === 'cancel') throw cancelAlreadyScheduled();
  }

  /**
   * Schedules the cancel at the period end. A request sent again before the provider's webhook synced the
   * first one (a double click, a client retry) is refused by the provider (Paddle:
   * `subscription_locked_pending_changes`); when the provider's own state then shows the cancel scheduled,
   * the answer is the 409 `cancel_already_scheduled` a synced row gets, not a 502 for an outage that is none.
   */
  private async cancelAtPeriodEnd(providerSubscriptionId: string): Promise<ProviderSubscription> {
    try {
      return await this.api.cancel(providerSubscriptionId, 'next_billing_period');
    } catch (err) {
      if (!(err instanceof BillingRejectedError)) throw err;
      const state = await this.api.get(providerSubscriptionId).catch(() => null);
      throw state?.scheduled_change?.action === 'cancel' ? cancelAlreadyScheduled() : err;
    }
  }

  private assertPurchasable(tier: string): void {
    if (!this.catalog.isPurchasable(tier)) {
      throw new ValidationError(`Tier ${tier} cannot be bought.`, [
        { field: 'tier', message: `tier must be one of ${this.catalog.purchasableTiers().join(', ')}` },
      ]);
    }
  }

  /** The price a checkout of `tier` sells (billed every `cycle` when given); 400 when there is none. */
  private checkoutPrice(tier: string, cycle: BillingCycle | undefined): string {
    this.assertPurchasable(tier);
    const priceId = this.catalog.checkoutPrice(tier, cycle);
    if (priceId === null) {
      const cycles = BILLING_CYCLES.filter((c) => this.catalog.checkoutPrice(tier, c) !== null);
      throw new ValidationError(`Tier ${tier} has no ${cycleName(cycle ?? null)} price.`, [
        {
          field: 'billing_cycle',
          message:
            cycles.length > 0
              ? `billing_cycle of ${tier} must be one of ${cycles.join(', ')}`
              : `${tier} has no price with a configured billing cycle; leave billing_cycle out`,
        },
      ]);
    }
    return priceId;
  }

  private userActor(user: User): Actor {
    return { actor: userActor(user.identityUserId), userId: user.identityUserId };
  }

  /** Calls the provider and audits the request with its outcome (accepted or failed). */
  private async requested(
    who: Actor,
    action: string,
    row: Subscription,
    details: AuditDetails,
    call: () => Promise<ProviderSubscription>,
  ): Promise<ProviderSubscription> {
    const entry = { ...who, action, resourceType: 'subscription', resourceId: row.id };
    const base = { ...details, subscription_id: row.providerSubscriptionId };
    let result: ProviderSubscription;
    try {
      result = await call();
    } catch (err) {
      const code = err instanceof AppError ? err.code : 'internal_error';
      await this.audit
        .recordStandalone({ ...entry, details: { ...base, status: 'failed', error: code } })
        .catch((auditErr: Error) =>
          this.logger.warn({ err: auditErr.message }, 'could not audit a failed request'),
        );
      throw err;
    }
    // The provider has acted: a failed audit insert must not turn that into a 500 (the client would
    // retry an operation that already happened). The error log carries the whole entry instead.
    const accepted = { ...entry, details: { ...base, status: 'accepted' } };
    await this.audit
      .recordStandalone(accepted)
      .catch((auditErr: Error) =>
        this.logger.error(
          { err: auditErr.message, audit: accepted },
          'billing request accepted by the provider, but its audit entry could not be written',
        ),
      );
    return result;
  }
}
