import { Injectable } from '@nestjs/common';
import { Unit } from '../../../infra/prisma/unit-of-work.js';
import { type Db, driverOf, type Tx } from '../../../infra/prisma/prisma.service.js';
import { Prisma, type Subscription } from '../../../generated/prisma/client.js';
import type { LockedUser } from './billing-users.repository.js';
import {
  type EventKey,
  LIVE_STATUSES,
  type SubscriptionSnapshot,
  type TierCorrection,
} from './subscription-snapshot.js';

export interface AppliedEvent {
  occurredAt: Date;
  eventId: string;
  expiredAt: Date | null;
  /** The event that sets the tier of the period after this one (periodTierAfter); null: unknown. */
  periodTier: EventKey | null;
}

/** A stored subscription under its lock, with its owner's row locked too (see lockAndFind). */
export interface LockedSubscription {
  subscription: Subscription;
  owner: LockedUser | null;
}

interface OwnerColumns {
  owner_id: string | null;
  owner_identity_user_id: string | null;
  owner_current_tier: string | null;
  owner_billing_customer_id: string | null;
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

/**
 * The UTC hour of the day (0..23) in which the drift check re-reads a long PAUSED/PAST_DUE subscription:
 * a stable hash of its provider id, so the same hour every day (drifting).
 */
export const driftHourOf = (providerSubscriptionId: Prisma.Sql) =>
  Prisma.sql`mod(abs(hashtext(${providerSubscriptionId})::bigint), 24)::int`;

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

/** The period-tier event's key in its columns (see periodTierAfter). */
const periodTierColumns = (key: EventKey | null) => ({
  periodTierAt: key?.occurredAt ?? null,
  periodTierStatus: key?.status ?? null,
  periodTierEventId: key?.eventId ?? null,
});

/** A subscriptions row as Prisma's model reads it, for driver statements (`s` is the table's alias). */
const subscriptionColumns = (s: string) => `${s}.id, ${s}.user_id AS "userId",
  ${s}.provider_subscription_id AS "providerSubscriptionId", ${s}.provider_customer_id AS "providerCustomerId",
  ${s}.status::text AS status, ${s}.tier, ${s}.price_id AS "priceId", ${s}.unit_amount AS "unitAmount",
  ${s}.currency, ${s}.billing_interval AS "billingInterval", ${s}.billing_frequency AS "billingFrequency",
  ${s}.quantity, ${s}.current_period_start AS "currentPeriodStart", ${s}.current_period_end AS "currentPeriodEnd",
  ${s}.canceled_at AS "canceledAt", ${s}.paused_at AS "pausedAt", ${s}.scheduled_change AS "scheduledChange",
  ${s}.pending_tier AS "pendingTier", ${s}.pending_tier_at AS "pendingTierAt",
  ${s}.period_tier_at AS "periodTierAt", ${s}.period_tier_status::text AS "periodTierStatus",
  ${s}.period_tier_event_id AS "periodTierEventId", ${s}.last_event_at AS "lastEventAt",
  ${s}.last_event_id AS "lastEventId", ${s}.expired_at AS "expiredAt", ${s}.created_at AS "createdAt",
  ${s}.updated_at AS "updatedAt"`;

/** See the billing_lock_subscriptions migration: the owner's columns are BillingUsersRepository's LockedUser. */
const LOCK_AND_FIND_SQL = `
  SELECT ${subscriptionColumns('s')}, u.id AS owner_id, u.identity_user_id AS owner_identity_user_id,
         u.current_tier AS owner_current_tier, u.billing_customer_id AS owner_billing_customer_id
  FROM billing_lock_subscriptions($1::text[], $2) r
  CROSS JOIN LATERAL (SELECT (r.subscription).*) s
  CROSS JOIN LATERAL (SELECT (r.owner).*) u`;

/**
 * Webhooks' states written over the stored ones (apply), several rows in one statement on the driver: the
 * worker's hottest write. $1 is a JSON array of rows in the model's field names.
 */
const APPLY_SQL = `
  UPDATE subscriptions s SET
    provider_customer_id = v."providerCustomerId", status = v.status, tier = v.tier, price_id = v."priceId",
    unit_amount = v."unitAmount", currency = v.currency, billing_interval = v."billingInterval",
    billing_frequency = v."billingFrequency", quantity = v.quantity,
    current_period_start = v."currentPeriodStart", current_period_end = v."currentPeriodEnd",
    canceled_at = v."canceledAt", paused_at = v."pausedAt", scheduled_change = v."scheduledChange",
    pending_tier = v."pendingTier", pending_tier_at = v."pendingTierAt", period_tier_at = v."periodTierAt",
    period_tier_status = v."periodTierStatus", period_tier_event_id = v."periodTierEventId",
    last_event_at = v."lastEventAt",
    last_event_id = v."lastEventId", expired_at = v."expiredAt", updated_at = now()
  FROM jsonb_to_recordset($1::jsonb) AS v(
    id uuid, "providerCustomerId" text, status "SubscriptionStatus", tier text, "priceId" text,
    "unitAmount" integer, currency text, "billingInterval" text, "billingFrequency" integer, quantity integer,
    "currentPeriodStart" timestamptz, "currentPeriodEnd" timestamptz, "canceledAt" timestamptz,
    "pausedAt" timestamptz, "scheduledChange" jsonb, "pendingTier" text, "pendingTierAt" timestamptz,
    "periodTierAt" timestamptz, "periodTierStatus" "SubscriptionStatus", "periodTierEventId" text,
    "lastEventAt" timestamptz, "lastEventId" text, "expiredAt" timestamptz)
  WHERE s.id = v.id`;

/** The unit-of-work key of the subscription writes apply() collects (see settle). */
const APPLIES = 'subscriptions.apply';

@Injectable()
export class SubscriptionsRepository {
  /**
   * Serializes all work on one provider subscription until the caller's transaction ends (webhooks and
   * the expiry job). Taken before the user-row lock, always in that order, so the two cannot deadlock.
   * An advisory lock rather than a row lock because the row may not exist yet (created and activated
   * racing to insert it). The billing_lock_subscriptions function (lockAndFind) takes the same key.
   */
  async lock(tx: Tx, providerSubscriptionId: string): Promise<void> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`billing-subscription:${providerSubscriptionId}`}, 0))`;
  }

  async findByProviderId(db: Db, providerSubscriptionId: string): Promise<Subscription | null> {
    await this.settle(db);
    return db.subscription.findUnique({ where: { providerSubscriptionId } });
  }

  /**
   * lock(), findByProviderId() and the owner's row lock (BillingUsersRepository.lock) in one round trip: a
   * database function whose reads see what the previous lock holder committed. Null when the subscription is
   * not stored yet (only the subscription's lock is then held). `lockOwner: false` leaves the user row alone
   * (owner null).
   */
  async lockAndFind(
    tx: Tx,
    providerSubscriptionId: string,
    options: { lockOwner: boolean },
  ): Promise<LockedSubscription | null> {
    return (
      (await this.lockAndFindMany(tx, [providerSubscriptionId], options)).get(providerSubscriptionId) ?? null
    );
  }

  /**
   * lockAndFind for several subscriptions in one statement (a batch of webhook events, the worker's first
   * statement): the locks are taken in a fixed order (see the billing_lock_subscriptions migration). The map
   * answers every id asked, null for a subscription not stored yet.
   */
  async lockAndFindMany(
    tx: Tx,
    providerSubscriptionIds: readonly string[],
    { lockOwner }: { lockOwner: boolean },
  ): Promise<Map<string, LockedSubscription | null>> {
    const found = new Map<string, LockedSubscription | null>(providerSubscriptionIds.map((id) => [id, null]));
    if (providerSubscriptionIds.length === 0) return found;
    await this.settle(tx);
    const { rows } = await driverOf(tx).query<Subscription & OwnerColumns>(LOCK_AND_FIND_SQL, [
      providerSubscriptionIds,
      lockOwner,
    ]);
    for (const row of rows) {
      const {
        owner_id,
        owner_identity_user_id,
        owner_current_tier,
        owner_billing_customer_id,
        ...subscription
      } = row;
      const owner: LockedUser | null = owner_id
        ? {
            id: owner_id,
            identity_user_id: owner_identity_user_id!,
            current_tier: owner_current_tier!,
            billing_customer_id: owner_billing_customer_id,
          }
        : null;
      found.set(subscription.providerSubscriptionId, { subscription, owner });
    }
    return found;
  }

  async insert(
    tx: Tx,
    userId: string,
    snapshot: SubscriptionSnapshot,
    event: AppliedEvent,
  ): Promise<Subscription> {
    await this.settle(tx);
    return tx.subscription.create({
      data: {
        userId,
        providerSubscriptionId: snapshot.providerSubscriptionId,
        ...columns(snapshot),
        ...periodTierColumns(event.periodTier),
        lastEventAt: event.occurredAt,
        lastEventId: event.eventId,
        expiredAt: event.expiredAt,
      },
    });
  }

  /**
   * The event's state written over `existing` (under its lock); answers the row as it now is. In a unit of
   * work that collects writes (a batch of webhook events) the write joins one statement for the whole batch,
   * written before the commit or before this repository next touches the table in that transaction (see
   * settle), whichever comes first. The row answered is computed: `updatedAt` is this process's clock, the
   * stored one the transaction's.
   */
  async apply(
    tx: Tx,
    existing: Subscription,
    snapshot: SubscriptionSnapshot,
    event: AppliedEvent,
  ): Promise<Subscription> {
    const row: Subscription = {
      ...existing,
      ...columns(snapshot),
      scheduledChange: snapshot.scheduledChange ?? null,
      ...periodTierColumns(event.periodTier),
      lastEventAt: event.occurredAt,
      lastEventId: event.eventId,
      expiredAt: event.expiredAt,
      updatedAt: new Date(),
    };
    await this.save(tx, row);
    return row;
  }

  /**
   * A late event's correction of the tier of the running period (correctTierOfPeriod) written over
   * `existing` (under its lock); everything else, the newest event's key included, stays. Written like
   * apply() (joins the batch's statement) so the two keep their order.
   */
  async correctTier(tx: Tx, existing: Subscription, correction: TierCorrection): Promise<Subscription> {
    const row: Subscription = {
      ...existing,
      tier: correction.tier,
      pendingTier: correction.pendingTier,
      pendingTierAt: correction.pendingTierAt,
      ...periodTierColumns(correction.periodTier),
      updatedAt: new Date(),
    };
    await this.save(tx, row);
    return row;
  }

  private async save(tx: Tx, row: Subscription): Promise<void> {
    const unit = Unit.find(tx);
    if (unit?.collectsWrites) unit.collect(APPLIES, row, (rows) => this.write(tx, rows));
    else await this.write(tx, [row]);
  }

  /** One UPDATE for the rows; a row applied twice is written as it was last. */
  private async write(tx: Tx, rows: readonly Subscription[]): Promise<void> {
    const last = new Map(rows.map((row) => [row.id, row]));
    await driverOf(tx).query(APPLY_SQL, [JSON.stringify([...last.values()])]);
  }

  /**
   * Writes what apply() collected in `db`'s unit of work before a statement of this repository reads or
   * writes the table in the same transaction.
   */
  private async settle(db: Db): Promise<void> {
    await Unit.find(db as Tx)?.flush(APPLIES);
  }

  /** The user's subscription that still exists at the provider and can be changed, newest first. */
  async findLiveForUser(db: Db, userId: string): Promise<Subscription | null> {
    await this.settle(db);
    return db.subscription.findFirst({
      where: { userId, status: { in: LIVE_STATUSES }, expiredAt: null },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    });
  }

  async findAllLiveForUser(db: Db, userId: string): Promise<Subscription[]> {
    await this.settle(db);
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
    await this.settle(tx);
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
  async lapsed(db: Db, now: Date, options: SweepOptions = {}) {
    await this.settle(db);
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
   * candidates of the monthly allowance job. PAUSED ones get nothing while paused. PAST_DUE ones are
   * candidates: the job grants their months only while the period's payment is recorded (past due for
   * another payment), an unpaid renewal waits until it is paid (the job then grants every month of the
   * period that has come); a CANCELED one keeps its months until the period it paid for ends (and until the
   * expiry job closes it). `id` narrows the check to one row (the job's re-check under the subscription's
   * lock).
   */
  async multiMonthPeriods(db: Db, now: Date, options: { id?: string; afterId?: string; limit: number }) {
    await this.settle(db);
    return db.subscription.findMany({
      where: {
        OR: [{ billingInterval: 'year' }, { billingInterval: 'month', billingFrequency: { gt: 1 } }],
        status: { in: ['ACTIVE', 'TRIALING', 'PAST_DUE', 'CANCELED'] },
        expiredAt: null,
        currentPeriodStart: { not: null, lte: now },
        ...(options.id ? { id: options.id } : options.afterId ? { id: { gt: options.afterId } } : {}),
      },
      orderBy: { id: 'asc' },
      take: options.limit,
    });
  }

  /** Subscriptions whose pending tier change is due at `now` (`id` narrows to one row, under the lock). */
  async dueTierChanges(db: Db, now: Date, options: SweepOptions = {}) {
    await this.settle(db);
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
    await this.settle(tx);
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
   * ended more than `renewalGrace` ago) and PAST_DUE/PAUSED ones untouched since `staleBefore`, those only
   * in their hour of the day: the one `hashtext(provider_subscription_id) mod 24` names, read when `hour`
   * (the UTC hour of the run's schedule slot) is it. Each is read back once a day, the reads spread over the
   * day (a paused subscription can stay so for months, and the provider's API allows 240 requests a minute
   * for everything we ask it), whatever minute of its hour a run starts: a bucket counted from the run's
   * own clock (hours since it turned stale) moved with each run's delay and read some twice a day, others
   * not at all. The first read comes within a day of turning stale.
   */
  async drifting(db: Db, renewalCutoff: Date, staleBefore: Date, hour: number, options: SweepOptions = {}) {
    await this.settle(db);
    const only = narrow(options);
    return db.$queryRaw<LapsedSubscription[]>`
      SELECT id, provider_subscription_id, user_id, status::text AS status FROM subscriptions
      WHERE expired_at IS NULL ${only}
        AND (
          (status IN ('ACTIVE', 'TRIALING') AND current_period_end < ${renewalCutoff}
             AND last_event_at < current_period_end)
          OR (status IN ('PAST_DUE', 'PAUSED') AND last_event_at < ${staleBefore}
             AND ${driftHourOf(Prisma.sql`provider_subscription_id`)} = ${hour}::int)
        )
      ORDER BY id
      LIMIT ${options.limit ?? 1}`;
  }

  async markExpired(tx: Tx, id: string, at: Date): Promise<Subscription> {
    await this.settle(tx);
    return tx.subscription.update({ where: { id }, data: { expiredAt: at } });
  }
}
