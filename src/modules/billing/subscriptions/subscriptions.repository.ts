import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../../infra/prisma/prisma.service.js';
import { Prisma, type Subscription } from '../../../generated/prisma/client.js';
import { LIVE_STATUSES, type SubscriptionSnapshot } from './subscription-snapshot.js';

export interface AppliedEvent {
  occurredAt: Date;
  eventId: string;
  expiredAt: Date | null;
}

export interface LapsedSubscription {
  id: string;
  provider_subscription_id: string;
  user_id: string;
  status: string;
}

/** One row (`id`, the re-check under the lock) or a page of rows after `after` (the job's cursor). */
export interface SweepOptions {
  id?: string;
  after?: string;
  limit?: number;
}

const narrow = (options: SweepOptions) =>
  options.id
    ? Prisma.sql`AND id = ${options.id}::uuid`
    : options.after
      ? Prisma.sql`AND id > ${options.after}::uuid`
      : Prisma.empty;

const columns = (snapshot: SubscriptionSnapshot) => ({
  providerCustomerId: snapshot.providerCustomerId,
  status: snapshot.status,
  tier: snapshot.tier,
  priceId: snapshot.priceId,
  unitAmount: snapshot.unitAmount,
  currency: snapshot.currency,
  billingInterval: snapshot.billingInterval,
  billingFrequency: snapshot.billingFrequency,
  quantity: snapshot.quantity,
  currentPeriodStart: snapshot.currentPeriodStart,
  currentPeriodEnd: snapshot.currentPeriodEnd,
  canceledAt: snapshot.canceledAt,
  pausedAt: snapshot.pausedAt,
  scheduledChange: snapshot.scheduledChange ?? Prisma.DbNull,
  pendingTier: snapshot.pendingTier,
  pendingTierAt: snapshot.pendingTierAt,
});

@Injectable()
export class SubscriptionsRepository {
  /**
   * Serializes all work on one provider subscription until the caller's transaction ends (webhooks and
   * the expiry job). Taken before the user-row lock, always in that order, so the two cannot deadlock.
   * An advisory lock rather than a row lock because the row may not exist yet (created and activated
   * racing to insert it).
   */
  async lock(tx: Tx, providerSubscriptionId: string): Promise<void> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`billing-subscription:${providerSubscriptionId}`}, 0))`;
  }

  findByProviderId(db: Db, providerSubscriptionId: string): Promise<Subscription | null> {
    return db.subscription.findUnique({ where: { providerSubscriptionId } });
  }

  insert(tx: Tx, userId: string, snapshot: SubscriptionSnapshot, event: AppliedEvent): Promise<Subscription> {
    return tx.subscription.create({
      data: {
        userId,
        providerSubscriptionId: snapshot.providerSubscriptionId,
        ...columns(snapshot),
        lastEventAt: event.occurredAt,
        lastEventId: event.eventId,
        expiredAt: event.expiredAt,
      },
    });
  }

  apply(tx: Tx, id: string, snapshot: SubscriptionSnapshot, event: AppliedEvent): Promise<Subscription> {
    return tx.subscription.update({
      where: { id },
      data: {
        ...columns(snapshot),
        lastEventAt: event.occurredAt,
        lastEventId: event.eventId,
        expiredAt: event.expiredAt,
      },
    });
  }

  /** The user's subscription that still exists at the provider and can be changed, newest first. */
  findLiveForUser(db: Db, userId: string): Promise<Subscription | null> {
    return db.subscription.findFirst({
      where: { userId, status: { in: LIVE_STATUSES }, expiredAt: null },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    });
  }

  findAllLiveForUser(db: Db, userId: string): Promise<Subscription[]> {
    return db.subscription.findMany({
      where: { userId, status: { in: LIVE_STATUSES }, expiredAt: null },
      orderBy: { createdAt: 'asc' },
    });
  }

  /** What GET /billing/subscription shows: a live one first, else the newest not yet expired. */
  async findCurrentForUser(db: Db, userId: string): Promise<Subscription | null> {
    return (
      (await this.findLiveForUser(db, userId)) ??
      db.subscription.findFirst({
        where: { userId, expiredAt: null },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      })
    );
  }

  /** Tiers of the user's subscriptions that grant access at `now` (the input of users.current_tier). */
  async accessTiers(tx: Tx, userId: string, now: Date): Promise<string[]> {
    const rows = await tx.subscription.findMany({
      where: {
        userId,
        expiredAt: null,
        OR: [{ status: { in: LIVE_STATUSES } }, { status: 'CANCELED', currentPeriodEnd: { gt: now } }],
      },
      select: { tier: true },
    });
    return rows.map((row) => row.tier);
  }

  /**
   * Subscriptions whose access has lapsed: canceled with the paid period over. PAUSED and PAST_DUE are never
   * lapsed here (state table: "tier is NOT downgraded", "access is NOT revoked"); the provider ends them
   * with subscription.canceled. `id` narrows the check to one row (the re-check under the lock).
   */
  lapsed(db: Db, now: Date, options: SweepOptions = {}) {
    const only = narrow(options);
    return db.$queryRaw<LapsedSubscription[]>`
      SELECT id, provider_subscription_id, user_id, status::text AS status FROM subscriptions
      WHERE expired_at IS NULL ${only}
        AND status = 'CANCELED' AND (current_period_end IS NULL OR current_period_end <= ${now})
      ORDER BY id
      LIMIT ${options.limit ?? 1}`;
  }

  /**
   * Subscriptions whose billing period is longer than a month (annual plans) and that still pay for it:
   * candidates of the monthly allowance job. PAUSED ones get nothing while paused; a CANCELED one keeps
   * its months until the period it paid for ends (and until the expiry job closes it).
   */
  multiMonthPeriods(db: Db, now: Date, options: { afterId?: string; limit: number }) {
    return db.subscription.findMany({
      where: {
        OR: [{ billingInterval: 'year' }, { billingInterval: 'month', billingFrequency: { gt: 1 } }],
        status: { in: ['ACTIVE', 'TRIALING', 'PAST_DUE', 'CANCELED'] },
        expiredAt: null,
        currentPeriodStart: { not: null, lte: now },
        ...(options.afterId ? { id: { gt: options.afterId } } : {}),
      },
      orderBy: { id: 'asc' },
      take: options.limit,
    });
  }

  /** Subscriptions whose pending tier change is due at `now` (`id` narrows to one row, under the lock). */
  dueTierChanges(db: Db, now: Date, options: SweepOptions = {}) {
    const only = narrow(options);
    return db.$queryRaw<LapsedSubscription[]>`
      SELECT id, provider_subscription_id, user_id, status::text AS status FROM subscriptions
      WHERE pending_tier IS NOT NULL AND pending_tier_at <= ${now} ${only}
      ORDER BY id
      LIMIT ${options.limit ?? 1}`;
  }

  /**
   * Makes the pending tier the subscription's tier (its period has ended). Returns the row after and the tier
   * it had before, or null when no change was due.
   */
  async applyPendingTier(
    tx: Tx,
    id: string,
    now: Date,
  ): Promise<{ row: Subscription; previousTier: string } | null> {
    const row = await tx.subscription.findUnique({ where: { id } });
    if (!row?.pendingTier || !row.pendingTierAt || row.pendingTierAt.getTime() > now.getTime()) return null;
    const updated = await tx.subscription.update({
      where: { id },
      data: { tier: row.pendingTier, pendingTier: null, pendingTierAt: null },
    });
    return { row: updated, previousTier: row.tier };
  }

  /**
   * The drift check's candidates: live subscriptions that should have renewed (ACTIVE/TRIALING whose period
   * ended more than `renewalGrace` ago) and PAST_DUE/PAUSED ones untouched since `staleBefore`.
   */
  drifting(db: Db, renewalCutoff: Date, staleBefore: Date, options: SweepOptions = {}) {
    const only = narrow(options);
    return db.$queryRaw<LapsedSubscription[]>`
      SELECT id, provider_subscription_id, user_id, status::text AS status FROM subscriptions
      WHERE expired_at IS NULL ${only}
        AND (
          (status IN ('ACTIVE', 'TRIALING') AND current_period_end < ${renewalCutoff}
             AND last_event_at < current_period_end)
          OR (status IN ('PAST_DUE', 'PAUSED') AND last_event_at < ${staleBefore})
        )
      ORDER BY id
      LIMIT ${options.limit ?? 1}`;
  }

  markExpired(tx: Tx, id: string, at: Date): Promise<Subscription> {
    return tx.subscription.update({ where: { id }, data: { expiredAt: at } });
  }
}
