import { Injectable, Logger } from '@nestjs/common';
import type { Tx } from '../../../infra/prisma/prisma.service.js';
import { OutboxService } from '../../../infra/queue/outbox.service.js';
import { JOBS } from '../../../infra/queue/queues.js';
import type { Subscription, WebhookEvent } from '../../../generated/prisma/client.js';
import { AuditService, webhookActor } from '../../audit/audit.service.js';
import { MetricsService } from '../../../infra/metrics/metrics.service.js';
import { CreditsService } from '../../credits/credits.service.js';
import type { SendEmailJob } from '../../email/email.types.js';
import type { DeletionJob } from '../../users/account-deletion.service.js';
import type { HandlerOutcome } from '../../webhooks/webhook-inbox.service.js';
import { firstPeriodGrantId, monthEnd } from '../jobs/allowance-months.js';
import { BillingCatalog } from '../billing.catalog.js';
import { BillingDunningService } from '../jobs/billing-dunning.service.js';
import { parsePayload, UnknownPriceError } from '../billing.errors.js';
import { type BillingEvent, occurredAtSchema, subscriptionSchema } from '../intake/billing-events.schema.js';
import { BillingOwnersService } from './billing-owners.service.js';
import { BillingTierService } from './billing-tier.service.js';
import { BillingUsersRepository, type LockedUser } from './billing-users.repository.js';
import { PaymentsRepository } from '../payments/payments.repository.js';
import { PaymentsService } from '../payments/payments.service.js';
import {
  auditActionOf,
  correctTierOfPeriod,
  deferTierChange,
  type EventKey,
  expiryAfter,
  grantsAccess,
  isNewer,
  LIVE_STATUSES,
  periodTierAfter,
  type StoredPeriodTier,
  type SubscriptionSnapshot,
  toSnapshot,
} from './subscription-snapshot.js';
import { type LockedSubscription, SubscriptionsRepository } from './subscriptions.repository.js';
import { WebhookInboxRepository } from '../../webhooks/webhook-inbox.repository.js';

const CREATED = 'subscription.created';

export { firstPeriodGrantId } from '../jobs/allowance-months.js';

/** The newer-wins order (isNewer) of an incoming event, and of the state stored by the last one applied. */
const eventKey = (event: BillingEvent, snapshot: SubscriptionSnapshot): EventKey => ({
  occurredAt: event.occurredAt,
  status: snapshot.status,
  eventId: event.eventId,
});
const storedKey = (existing: Subscription): EventKey => ({
  occurredAt: existing.lastEventAt,
  status: existing.status,
  eventId: existing.lastEventId ?? '',
});
/** The stored row as the period-tier rule reads it (periodTierAfter, correctTierOfPeriod). */
const storedPeriodTier = (existing: Subscription): StoredPeriodTier => ({
  tier: existing.tier,
  pendingTier: existing.pendingTier,
  currentPeriodStart: existing.currentPeriodStart,
  currentPeriodEnd: existing.currentPeriodEnd,
  periodTier:
    existing.periodTierAt && existing.periodTierStatus && existing.periodTierEventId
      ? {
          occurredAt: existing.periodTierAt,
          status: existing.periodTierStatus,
          eventId: existing.periodTierEventId,
        }
      : null,
});

/**
 * What apply() made of an event: written over the row (or inserted); older than the stored state and so
 * skipped; or older but the one that sets the tier of the running period, which it corrected.
 */
type ApplyOutcome = 'applied' | 'stale' | 'tier_corrected';

/** The audit reason of a stale event that corrected the tier of the running period. */
const TIER_CORRECTED = 'stale_event_tier_corrected';

/**
 * The subscription state machine driven by billing webhooks (spec "States and transitions"). Every
 * event carries the whole subscription; it is applied when it is newer than what is stored (see
 * isNewer), all work on one subscription is serialized by an advisory lock, and only
 * subscription.created grants credits (once, keyed on its event id).
 */
@Injectable()
export class SubscriptionStateService {
  private readonly logger = new Logger(SubscriptionStateService.name);
  /**
   * Subscriptions a batch of events locked and read in one statement (prepare), per transaction. An entry
   * serves the first event of its subscription only, and none once its owner was handled: the rows it holds
   * are current until an event writes the subscription or its user.
   */
  private readonly prepared = new WeakMap<Tx, Map<string, LockedSubscription | null>>();

  constructor(
    private readonly catalog: BillingCatalog,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly users: BillingUsersRepository,
    private readonly owners: BillingOwnersService,
    private readonly tiers: BillingTierService,
    private readonly payments: PaymentsRepository,
    private readonly paymentEvents: PaymentsService,
    private readonly archive: WebhookInboxRepository,
    private readonly credits: CreditsService,
    private readonly outbox: OutboxService,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
    private readonly dunning: BillingDunningService,
  ) {}

  /**
   * Locks and reads, in one statement, the subscriptions (and their owners) that the events about to be
   * handled in `tx` name: each handle() then starts from what was read instead of a statement of its own
   * (issue 15 item 3). Valid until forgetPrepared() or the end of the transaction.
   */
  async prepare(tx: Tx, providerSubscriptionIds: readonly string[]): Promise<void> {
    const ids = [...new Set(providerSubscriptionIds)];
    this.prepared.set(tx, await this.subscriptions.lockAndFindMany(tx, ids, { lockOwner: true }));
  }

  /** Another handler is about to write in `tx`: what prepare() read may no longer be current. */
  forgetPrepared(tx: Tx): void {
    this.prepared.delete(tx);
  }

  async handle(tx: Tx, event: BillingEvent): Promise<HandlerOutcome> {
    const data = parsePayload(subscriptionSchema, event.data, `${event.eventType} data`);
    const locked = await this.lockAndFind(tx, data.id);
    const existing = locked?.subscription ?? null;
    const snapshot = this.snapshotOf(data, event, existing);

    let userId = existing?.userId;
    let lateToken: { expiresAt: Date } | undefined;
    if (!userId) {
      const owner = await this.owners.resolve(tx, {
        customData: data.custom_data,
        customerId: data.customer_id,
        at: event.occurredAt,
      });
      if (!owner.ok) return this.skip(tx, event, owner.reason, data.id);
      userId = owner.userId;
      lateToken = owner.lateToken;
    }
    // A stored subscription's owner was locked with it.
    const user = locked?.owner ?? (await this.users.lock(tx, userId));
    if (!user) return this.skip(tx, event, 'unknown_user', data.id);
    this.forgetOwner(tx, user.id);

    const now = new Date();
    const result = await this.apply(tx, existing, user.id, snapshot, event, now);
    const applied = result.outcome === 'applied';
    let row = result.row;
    if (applied) {
      // Dunning e-mails on entering and leaving past_due, decided under the subscription's lock.
      await this.dunning.onTransition(tx, existing?.status ?? null, row, event.data);
    }
    if (snapshot.providerCustomerId && !user.billing_customer_id) {
      await this.users.linkCustomer(tx, user.id, snapshot.providerCustomerId);
    }
    let credits = 0;
    if (!existing) {
      await this.payments.linkPaymentsToUser(tx, row.providerSubscriptionId, user.id);
      row = await this.replayParked(tx, row, user, now);
      // Renewals paid before anything tied the subscription to its user get their credits now, once.
      credits += await this.paymentEvents.grantParkedRenewals(tx, event, row, user, now);
      await this.auditDuplicate(tx, row, user);
      await this.cancelForPendingDeletion(tx, row, user);
    }

    if (event.eventType === CREATED) credits += await this.onCreated(tx, event, row, snapshot, user, now);
    const tier = await this.tiers.afterChange(tx, user, row, now);

    await this.audit.record(tx, {
      actor: event.actor ?? webhookActor('billing'),
      action: auditActionOf(event.eventType),
      userId: user.identity_user_id,
      resourceType: 'subscription',
      resourceId: row.id,
      details: {
        event_id: event.eventId,
        event_type: event.eventType,
        subscription_id: row.providerSubscriptionId,
        status: row.status,
        tier: tier.current,
        previous_tier: tier.previous,
        credits,
        ...(applied ? {} : { reason: result.outcome === 'stale' ? 'stale_event' : TIER_CORRECTED }),
        ...(lateToken ? { checkout_token_expired_at: lateToken.expiresAt.toISOString() } : {}),
      },
    });
    // A correction changed the row: the event was not ignored.
    if (result.outcome !== 'stale' || event.eventType === CREATED) return { status: 'processed' };
    return { status: 'skipped', reason: 'stale_event' };
  }

  /** The prepared subscription (used once), or a statement of its own. */
  private async lockAndFind(tx: Tx, providerSubscriptionId: string): Promise<LockedSubscription | null> {
    const prepared = this.prepared.get(tx);
    const found = prepared?.get(providerSubscriptionId);
    if (found === undefined) {
      return this.subscriptions.lockAndFind(tx, providerSubscriptionId, { lockOwner: true });
    }
    prepared!.delete(providerSubscriptionId);
    return found;
  }

  /** This event writes the user's row: later events of the batch read their owner again. */
  private forgetOwner(tx: Tx, userId: string): void {
    const prepared = this.prepared.get(tx);
    if (!prepared) return;
    for (const [id, found] of prepared) if (found?.owner?.id === userId) prepared.delete(id);
  }

  /**
   * A price missing from the configuration keeps the tier already stored for it (a retired price with
   * grandfathered subscribers); an unknown price on a new subscription, or on an event that would change
   * the stored one, fails the event (see UnknownPriceError). An event older than the stored state changes
   * nothing, so it needs no tier: a late or redelivered event naming a price retired since the
   * subscription moved off it is skipped as stale like any other (its snapshot carries the stored tier
   * and is never written). A created still needs its price's tier for the first period's grant.
   */
  private snapshotOf(
    data: ReturnType<typeof subscriptionSchema.parse>,
    event: BillingEvent,
    existing: Subscription | null,
  ): SubscriptionSnapshot {
    const priceId = data.items[0].price.id;
    const tier = this.catalog.tierForPrice(priceId) ?? (existing?.priceId === priceId ? existing.tier : null);
    const context = { occurredAt: event.occurredAt, storedCanceledAt: existing?.canceledAt };
    if (tier) return toSnapshot(data, event.eventType, tier, context);
    if (existing && event.eventType !== CREATED) {
      const stale = toSnapshot(data, event.eventType, existing.tier, context);
      if (!isNewer(eventKey(event, stale), storedKey(existing))) return stale;
    }
    throw new UnknownPriceError(priceId);
  }

  /**
   * Inserts the row, or overwrites it when the event is newer than the stored state. An older event is not
   * applied (`stale`), but for the tier of the running period when in event order it is the one that sets
   * it (correctTierOfPeriod; `tier_corrected` when that moved the tier): a price change delivered before
   * the event that opened its period is so deferred as if it had come in order.
   */
  private async apply(
    tx: Tx,
    existing: Subscription | null,
    userId: string,
    snapshot: SubscriptionSnapshot,
    event: BillingEvent,
    now: Date,
  ): Promise<{ row: Subscription; outcome: ApplyOutcome }> {
    const key = eventKey(event, snapshot);
    if (!existing) {
      const expiredAt = expiryAfter(snapshot, null, now);
      const periodTier = periodTierAfter(snapshot, null, key);
      const row = await this.subscriptions.insert(tx, userId, snapshot, { ...event, expiredAt, periodTier });
      return { row, outcome: 'applied' };
    }
    const stored = storedPeriodTier(existing);
    if (!isNewer(key, storedKey(existing))) {
      // A tier is only taken from a price the configuration maps (snapshotOf may have lent the stored one).
      const correction = this.catalog.tierForPrice(snapshot.priceId)
        ? correctTierOfPeriod(snapshot, key, stored, now)
        : null;
      if (!correction) return { row: existing, outcome: 'stale' };
      const row = await this.subscriptions.correctTier(tx, existing, correction);
      if (row.tier !== existing.tier || row.pendingTier !== existing.pendingTier) {
        this.logger.log(
          {
            event_id: event.eventId,
            subscription_id: existing.providerSubscriptionId,
            tier: row.tier,
            previous_tier: existing.tier,
            pending_tier: row.pendingTier,
          },
          'late event of the running period corrected its tier',
        );
        return { row, outcome: 'tier_corrected' };
      }
      // Only the period-tier event moved (an earlier event of the same tier).
      return { row, outcome: 'stale' };
    }
    const next = deferTierChange(snapshot, existing, now);
    const expiredAt = expiryAfter(next, existing.expiredAt, now);
    const periodTier = periodTierAfter(next, stored, key);
    const row = await this.subscriptions.apply(tx, existing, next, { ...event, expiredAt, periodTier });
    return { row, outcome: 'applied' };
  }

  /**
   * Credits for the first period and the welcome e-mail after commit. The grant is keyed on the
   * subscription, not the event id: a second subscription.created of the same subscription (a new event id)
   * is the same first period and grants nothing more. A created that arrives after the subscription's
   * access has already ended keeps its grant (the first period was paid; a refund comes as an adjustment)
   * but sends no "your plan is active" e-mail.
   */
  private async onCreated(
    tx: Tx,
    event: BillingEvent,
    row: Subscription,
    snapshot: SubscriptionSnapshot,
    user: LockedUser,
    now: Date,
  ): Promise<number> {
    let granted = 0;
    const amount = this.catalog.monthlyCredits(snapshot.tier);
    if (amount > 0) {
      // Month 0 of the first period; an annual period's later months come from the allowance job. The
      // period is this event's own: a late created leaves a row that a newer event already moved on, and
      // dating the first period by that row made it close (and expire) the newer period's allowance.
      const startsAt = snapshot.currentPeriodStart ?? event.occurredAt;
      const grant = await this.credits.grantAllowance(tx, {
        userId: user.id,
        tier: snapshot.tier,
        amount,
        jobId: firstPeriodGrantId(row.providerSubscriptionId),
        startsAt,
        endsAt: monthEnd(startsAt, 0, snapshot.currentPeriodEnd),
        details: {
          source: CREATED,
          subscription_id: row.providerSubscriptionId,
          event_id: event.eventId,
        },
      });
      granted = grant.applied ? amount : 0;
      // The first payment's refund may have come before this event: it takes the first period back now.
      await this.paymentEvents.clawBackEarlyFirstPayment(tx, event, row.providerSubscriptionId);
    }
    if (!grantsAccess(row, now)) {
      this.logger.log(
        { event_id: event.eventId, subscription_id: row.providerSubscriptionId, status: row.status },
        'subscription.created arrived after its access ended; no welcome e-mail',
      );
      return granted;
    }
    const welcome = `subscription-welcome-${row.id}`;
    await this.outbox.add(
      tx,
      JOBS.sendEmail,
      {
        userId: user.id,
        templateKey: 'subscription_welcome',
        idempotencyKey: welcome,
        data: { tier: snapshot.tier },
      } satisfies SendEmailJob,
      welcome,
    );
    return granted;
  }

  /**
   * A second live subscription for one user (two checkout tabs): it is processed (the customer paid) and
   * the user keeps the richest tier, but an operator must refund one, so it is audited and counted.
   */
  private async auditDuplicate(tx: Tx, row: Subscription, user: LockedUser): Promise<void> {
    if (!LIVE_STATUSES.includes(row.status) || row.expiredAt) return;
    const others = (await this.subscriptions.findAllLiveForUser(tx, user.id)).filter((s) => s.id !== row.id);
    if (others.length === 0) return;
    this.metrics.duplicateSubscriptions.inc();
    this.logger.warn(
      {
        subscription_id: row.providerSubscriptionId,
        other_subscription_ids: others.map((s) => s.providerSubscriptionId),
      },
      'a second live subscription for one user: refund one',
    );
    await this.audit.record(tx, {
      actor: webhookActor('billing'),
      action: 'billing.duplicate_subscription',
      userId: user.identity_user_id,
      resourceType: 'subscription',
      resourceId: row.id,
      details: {
        subscription_id: row.providerSubscriptionId,
        other_subscription_id: others.map((s) => s.providerSubscriptionId),
        tier: row.tier,
        status: row.status,
      },
    });
  }

  /**
   * A live subscription that starts while its owner's account waits for erasure (a checkout opened before
   * the deletion request and paid after it): the request's `deletion_requested` hooks ran already and found
   * nothing to cancel, so they run again for this subscription (Billing's cancels every live one at once);
   * otherwise the provider went on billing the person after the erasure. The job re-checks the deletion, so
   * a restore before it runs cancels nothing.
   */
  private async cancelForPendingDeletion(tx: Tx, row: Subscription, user: LockedUser): Promise<void> {
    if (!LIVE_STATUSES.includes(row.status) || row.expiredAt) return;
    const deletedAt = await this.users.deletedAt(tx, user.id);
    if (!deletedAt) return;
    this.logger.warn(
      { subscription_id: row.providerSubscriptionId, user_id: user.id },
      'a subscription started for an account awaiting deletion: cancelling it',
    );
    const job: DeletionJob = { userId: user.id, deletedAt: deletedAt.toISOString() };
    await this.outbox.add(
      tx,
      JOBS.accountDeletionRequested,
      job,
      `deletion-requested-${user.id}-${deletedAt.getTime()}-${row.id}`,
    );
  }

  /**
   * Events that arrived before anything tied the subscription to a user were parked (archived SKIPPED
   * as unknown_subscription). Now that the row exists, their state is applied in event order, so the
   * final row does not depend on delivery order. Their side effects are not replayed: only created
   * grants credits, and a parked created would need its own verified token.
   */
  private async replayParked(tx: Tx, row: Subscription, user: LockedUser, now: Date): Promise<Subscription> {
    const parked = await this.archive.parkedFor(tx, row.providerSubscriptionId, now);
    let current = row;
    for (const stored of parked) {
      const event = this.parkedEvent(stored, current);
      if (!event) continue;
      const { row: next, outcome } = await this.apply(tx, current, user.id, event.snapshot, event, now);
      current = next;
      await this.archive.markReplayed(tx, stored.id, now);
      await this.audit.record(tx, {
        actor: webhookActor('billing'),
        action: auditActionOf(event.eventType),
        userId: user.identity_user_id,
        resourceType: 'subscription',
        resourceId: current.id,
        details: {
          event_id: event.eventId,
          event_type: event.eventType,
          subscription_id: current.providerSubscriptionId,
          status: current.status,
          reason: { applied: 'replayed_after_park', stale: 'stale_event', tier_corrected: TIER_CORRECTED }[
            outcome
          ],
        },
      });
    }
    return current;
  }

  private parkedEvent(
    stored: WebhookEvent,
    current: Subscription,
  ): (BillingEvent & { snapshot: SubscriptionSnapshot }) | null {
    const body = stored.payload as { data?: unknown; occurred_at?: unknown };
    const data = subscriptionSchema.safeParse(body?.data);
    const occurredAt = occurredAtSchema.safeParse(body?.occurred_at);
    if (!data.success || !occurredAt.success) return null;
    const tier = this.catalog.tierForPrice(data.data.items[0].price.id);
    if (!tier) {
      this.logger.warn({ event_id: stored.eventId }, 'parked event names an unknown price; left parked');
      return null;
    }
    return {
      eventId: stored.eventId,
      eventType: stored.eventType,
      occurredAt: occurredAt.data,
      data: data.data,
      snapshot: toSnapshot(data.data, stored.eventType, tier, {
        occurredAt: occurredAt.data,
        storedCanceledAt: current.canceledAt,
      }),
    };
  }

  private async skip(
    tx: Tx,
    event: BillingEvent,
    reason: string,
    subscriptionId: string,
  ): Promise<HandlerOutcome> {
    this.logger.warn(
      { event_id: event.eventId, event_type: event.eventType, reason },
      'billing event skipped',
    );
    await this.audit.record(tx, {
      actor: event.actor ?? webhookActor('billing'),
      action: 'webhook.skipped',
      resourceType: 'webhook_event',
      resourceId: event.eventId,
      details: {
        provider: 'billing',
        event_id: event.eventId,
        event_type: event.eventType,
        subscription_id: subscriptionId,
        reason,
      },
    });
    return { status: 'skipped', reason };
  }
}
