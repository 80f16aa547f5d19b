import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../../infra/prisma/prisma.service.js';
import { AuditService, webhookActor } from '../../audit/audit.service.js';
import { CREDIT_KINDS, CreditsService } from '../../credits/credits.service.js';
import type { Payment, Subscription } from '../../../generated/prisma/client.js';
import type { HandlerOutcome } from '../../webhooks/webhook-inbox.service.js';
import { BillingCatalog, FREE_TIER } from '../billing.catalog.js';
import { parsePayload } from '../billing.errors.js';
import {
  adjustmentSchema,
  type BillingEvent,
  type TransactionData,
  transactionSchema,
} from '../intake/billing-events.schema.js';
import {
  firstPeriodGrantId,
  monthEnd,
  nearestPayment,
  PAID_PERIOD_TOLERANCE_MS,
} from '../jobs/allowance-months.js';
import { BillingOwnersService } from '../subscriptions/billing-owners.service.js';
import { BillingTierService } from '../subscriptions/billing-tier.service.js';
import { BillingUsersRepository, type LockedUser } from '../subscriptions/billing-users.repository.js';
import { PaymentsRepository } from './payments.repository.js';
import { SubscriptionsRepository } from '../subscriptions/subscriptions.repository.js';
import { PARKED_REASON, WebhookInboxRepository } from '../../webhooks/webhook-inbox.repository.js';

/** Paddle's origin of a transaction that renews a subscription (as opposed to the first payment or a proration). */
const RENEWAL_ORIGIN = 'subscription_recurring';

const CHARGEBACK = 'chargeback';

/** Adjustment actions that take a payment back, and so the credits it granted (issue 18 item 4). */
const CLAWBACK_ACTIONS = new Set(['refund', CHARGEBACK]);

/** A chargeback the merchant won: the money of a chargeback came back (decision "refunded annual period"). */
const CHARGEBACK_REVERSE = 'chargeback_reverse';

/** Paddle's adjustment type for the whole transaction (its grand total: the total net of customer credit). */
const FULL_TYPE = 'full';

/** Minor units an adjustment returned of a payment of `paid`: a `full` one all of it, else its total. */
const returnedBy = (adjustment: { type: string | null; amountTotal: number }, paid: number): number =>
  adjustment.type === FULL_TYPE ? paid : Math.max(adjustment.amountTotal, 0);

/** An approved refund or chargeback of one transaction, from its webhook or from the stored adjustment. */
interface ApprovedRefund {
  adjustmentId: string;
  transactionId: string | null | undefined;
  action: string;
  /** Minor units refunded. */
  total: number;
  /** The provider says the whole transaction was refunded. */
  full: boolean;
  /** What its claw-back took when it already ran (0: nothing was left); null when it never ran. */
  clawedBack: number | null;
}

/** The payment that paid a billing period, and how much of it was returned (see periodPayment). */
export interface PeriodPayment {
  transactionId: string;
  /** Minor units paid. */
  paid: number;
  /** Minor units that approved refunds and chargebacks of it returned, at most `paid`. */
  refunded: number;
}

/**
 * Money events: transaction.completed records the payment for revenue and, for a renewal, grants the
 * tier's monthly credits keyed on the transaction id; adjustment.created/updated record refunds and
 * credits. The records keep their rows when the user is erased (user link set to null).
 *
 * A transaction of a subscription takes the subscription's advisory lock first, like every subscription
 * event, so a renewal and the events that create its subscription are serialized: either the renewal finds
 * the subscription's owner, or it is recorded without one, parked, and granted by the transaction that
 * creates the subscription row (grantParkedRenewals). Its credits are keyed on the transaction id either way.
 *
 * A refund and the grant it takes back meet under the same exclusive locks (decision "claw-back
 * serialization"): the transaction's claw-back lock (PaymentsRepository.lockTransaction) and, for a
 * subscription's payment, the subscription's lock, always in the order subscription, transaction, user row. Whichever is applied second
 * reads what the first committed, so two apply batches open at once cannot both miss the other.
 */
@Injectable()
export class PaymentsService {
  constructor(
    private readonly catalog: BillingCatalog,
    private readonly payments: PaymentsRepository,
    private readonly subscriptions: SubscriptionsRepository,
    private readonly owners: BillingOwnersService,
    private readonly users: BillingUsersRepository,
    private readonly tiers: BillingTierService,
    private readonly archive: WebhookInboxRepository,
    private readonly credits: CreditsService,
    private readonly audit: AuditService,
  ) {}

  async transactionCompleted(tx: Tx, event: BillingEvent): Promise<HandlerOutcome> {
    const data = parsePayload(transactionSchema, event.data, 'transaction.completed data');
    const packPrices = data.subscription_id
      ? []
      : data.items
          .map((item) => item.price?.id)
          .filter((id): id is string => !!id && this.catalog.packCredits(id) !== null);
    const subscription = data.subscription_id
      ? ((await this.subscriptions.lockAndFind(tx, data.subscription_id, { lockOwner: false }))
          ?.subscription ?? null)
      : null;
    // Before anything is read: a refund of this transaction applied at the same time waits, or is waited for.
    await this.payments.lockTransaction(tx, data.id);
    if (packPrices.length > 0) return this.packPurchase(tx, event, data, packPrices);
    const userId =
      subscription?.userId ?? (await this.ownerOf(tx, data.custom_data, data.customer_id, event.occurredAt));
    const priceId = data.items.find((item) => item.price)?.price?.id ?? null;
    const tier = (priceId ? this.catalog.tierForPrice(priceId) : null) ?? subscription?.tier ?? null;

    const payment = await this.payments.upsertPayment(tx, {
      userId,
      providerTransactionId: data.id,
      providerSubscriptionId: data.subscription_id,
      status: data.status,
      origin: data.origin ?? null,
      tier,
      amountTotal: data.details.totals.total,
      currency: data.details.totals.currency_code ?? data.currency_code ?? 'USD',
      occurredAt: data.billed_at ?? event.occurredAt,
    });

    let credits = 0;
    let reason: string | undefined;
    if (data.origin === RENEWAL_ORIGIN) {
      // The renewal opens the next period: a tier change scheduled for its start takes effect now.
      if (subscription && userId) await this.applyDueTierChange(tx, subscription, userId);
      if (!userId) reason = data.subscription_id ? PARKED_REASON : 'unknown_owner';
      else if (!tier || tier === FREE_TIER) reason = 'unknown_tier';
      else {
        const startsAt = data.billing_period?.starts_at ?? data.billed_at ?? event.occurredAt;
        credits = await this.grantRenewal(
          tx,
          userId,
          tier,
          data.id,
          startsAt,
          data.billing_period?.ends_at ?? null,
        );
      }
    }

    // A refund or chargeback delivered before this transaction takes back what it granted now.
    await this.clawBackEarlyAdjustments(tx, event, data.id, data.subscription_id);

    await this.audit.record(tx, {
      actor: event.actor ?? webhookActor('billing'),
      action: 'transaction.completed',
      userId: userId ? await this.identityOf(tx, userId) : null,
      resourceType: 'payment',
      resourceId: payment.id,
      details: {
        event_id: event.eventId,
        transaction_id: data.id,
        subscription_id: data.subscription_id,
        origin: data.origin ?? null,
        amount: payment.amountTotal,
        currency: payment.currency,
        tier,
        credits,
        ...(reason ? { reason } : {}),
      },
    });
    if (reason === PARKED_REASON) return { status: 'skipped', reason };
    return reason ? { status: 'skipped', reason: `renewal_credits_${reason}` } : { status: 'processed' };
  }

  /**
   * Called in the transaction that creates a subscription row (under its lock): renewals of that
   * subscription that were paid before anything tied it to a user now grant their credits (keyed on the
   * transaction id, so a renewal already granted grants nothing), and their parked archive rows are marked
   * processed. A refund of such a renewal recorded meanwhile takes its grant back at once. Returns the
   * credits granted.
   */
  async grantParkedRenewals(
    tx: Tx,
    event: BillingEvent,
    row: Subscription,
    user: LockedUser,
    now: Date,
  ): Promise<number> {
    let credits = 0;
    const renewals = await this.payments.renewalsOf(tx, row.providerSubscriptionId, RENEWAL_ORIGIN);
    for (const payment of renewals) {
      const tier = payment.tier ?? row.tier;
      if (tier === FREE_TIER) continue;
      const granted = await this.grantRenewal(
        tx,
        user.id,
        tier,
        payment.providerTransactionId,
        payment.occurredAt,
        null,
      );
      if (granted === 0) continue;
      credits += granted;
      await this.audit.record(tx, {
        actor: webhookActor('billing'),
        action: 'transaction.completed',
        userId: user.identity_user_id,
        resourceType: 'payment',
        resourceId: payment.id,
        details: {
          transaction_id: payment.providerTransactionId,
          subscription_id: row.providerSubscriptionId,
          origin: RENEWAL_ORIGIN,
          tier,
          credits: granted,
          reason: 'replayed_after_park',
        },
      });
      // Its refund could find nothing to take back while the renewal was parked.
      await this.clawBackEarlyAdjustments(
        tx,
        event,
        payment.providerTransactionId,
        row.providerSubscriptionId,
      );
    }
    for (const parked of await this.archive.parkedFor(tx, row.providerSubscriptionId, now, 'transaction.')) {
      await this.archive.markReplayed(tx, parked.id, now);
    }
    return credits;
  }

  /** Month 0 of the period a renewal opens (an annual period's later months come from the allowance job). */
  private async grantRenewal(
    tx: Tx,
    userId: string,
    tier: string,
    transactionId: string,
    startsAt: Date,
    periodEnd: Date | null,
  ): Promise<number> {
    const amount = this.catalog.monthlyCredits(tier);
    if (amount <= 0) return 0;
    const grant = await this.credits.grantAllowance(tx, {
      userId,
      amount,
      tier,
      jobId: transactionId,
      startsAt,
      endsAt: monthEnd(startsAt, 0, periodEnd),
      details: { source: 'renewal', transaction_id: transactionId },
    });
    return grant.applied ? amount : 0;
  }

  /**
   * A top-up pack (no subscription): granted once, keyed on the transaction id, kind `purchase`, to the
   * user its checkout token names, when that token names this pack (see resolvePackBuyer). The payment is
   * recorded either way (revenue); without a verified buyer it is recorded without an owner and nothing
   * is granted.
   */
  private async packPurchase(
    tx: Tx,
    event: BillingEvent,
    data: TransactionData,
    packPrices: string[],
  ): Promise<HandlerOutcome> {
    const buyer = await this.owners.resolvePackBuyer(tx, {
      customData: data.custom_data,
      customerId: data.customer_id,
      packPrices,
    });
    const userId = buyer.ok ? buyer.userId : null;
    const payment = await this.payments.upsertPayment(tx, {
      userId,
      providerTransactionId: data.id,
      providerSubscriptionId: null,
      status: data.status,
      origin: data.origin ?? null,
      tier: null,
      amountTotal: data.details.totals.total,
      currency: data.details.totals.currency_code ?? data.currency_code ?? 'USD',
      occurredAt: data.billed_at ?? event.occurredAt,
    });
    let credits = 0;
    if (buyer.ok) {
      const quantity = data.items
        .filter((item) => item.price?.id === buyer.priceId)
        .reduce((sum, item) => sum + (item.quantity ?? 1), 0);
      const amount = (this.catalog.packCredits(buyer.priceId) ?? 0) * Math.max(quantity, 1);
      const grant = await this.credits.grant(tx, {
        userId: buyer.userId,
        amount,
        jobId: data.id,
        kind: CREDIT_KINDS.purchase,
        details: { price_id: buyer.priceId, transaction_id: data.id, quantity: Math.max(quantity, 1) },
      });
      credits = grant.applied ? amount : 0;
      await this.clawBackEarlyAdjustments(tx, event, data.id, null);
    }
    await this.audit.record(tx, {
      actor: event.actor ?? webhookActor('billing'),
      action: 'transaction.completed',
      userId: userId ? await this.identityOf(tx, userId) : null,
      resourceType: 'payment',
      resourceId: payment.id,
      details: {
        event_id: event.eventId,
        transaction_id: data.id,
        origin: data.origin ?? null,
        amount: payment.amountTotal,
        currency: payment.currency,
        price_id: buyer.ok ? buyer.priceId : packPrices[0],
        kind: CREDIT_KINDS.purchase,
        credits,
        ...(buyer.ok ? {} : { reason: buyer.reason }),
      },
    });
    return buyer.ok ? { status: 'processed' } : { status: 'skipped', reason: buyer.reason };
  }

  /**
   * Approved refunds and chargebacks of `transactionId` recorded before the credits they take back were
   * granted (webhooks arrive in any order: the adjustment before its transaction.completed, or a first
   * payment's refund before subscription.created) are applied once the grants exist. Each is keyed on its
   * adjustment id like the direct path, so one already applied takes nothing more. The caller holds the
   * locks a refund of the transaction takes (the subscription's, `lockedSubscriptionId`, or for a
   * transaction without one its claw-back lock), so a refund applied at the same time is not missed.
   */
  async clawBackEarlyFirstPayment(
    tx: Tx,
    event: BillingEvent,
    providerSubscriptionId: string,
  ): Promise<void> {
    const first = await this.payments.firstPaymentOf(tx, providerSubscriptionId);
    if (first) {
      await this.clawBackEarlyAdjustments(tx, event, first.providerTransactionId, providerSubscriptionId);
    }
  }

  async clawBackEarlyAdjustments(
    tx: Tx,
    event: BillingEvent,
    transactionId: string,
    lockedSubscriptionId: string | null,
  ): Promise<void> {
    const early = await this.payments.approvedAdjustmentsOf(tx, transactionId, [...CLAWBACK_ACTIONS]);
    for (const adjustment of early) {
      const refund = {
        adjustmentId: adjustment.providerAdjustmentId,
        transactionId,
        action: adjustment.action,
        total: adjustment.amountTotal,
        // Its stored type: a Paddle full refund's total is the grand total, possibly below the payment's.
        full: adjustment.type === FULL_TYPE,
        clawedBack: adjustment.clawedBackCredits,
      };
      await this.clawBack(tx, event, refund, adjustment.id, lockedSubscriptionId);
    }
  }

  /**
   * An approved refund or chargeback takes back the credits its transaction granted: the pack purchase
   * or the renewal grant keyed on the transaction id, or, for a subscription's first payment, the
   * first-period grant, and for a multi-month period (annual) the monthly allowances of the period it paid
   * granted so far; net of what a rollover rule already expired. A partial refund takes the refunded share
   * (rounded up). Runs once per adjustment: keyed on the adjustment id in the ledger, and recorded on the
   * adjustment row (`clawed_back_credits`), so that one which found nothing left to take (a second full
   * refund of the transaction) writes no ledger row and no `credits.clawed_back` entry, and does not take
   * later grants (an annual plan's next month) when it is redelivered. Runs under the transaction's
   * claw-back lock or the lock of `lockedSubscriptionId`; a subscription only the payment names is locked
   * here (see lockForClawBack).
   */
  private async clawBack(
    tx: Tx,
    event: BillingEvent,
    refund: ApprovedRefund,
    recordId: string,
    lockedSubscriptionId: string | null,
  ) {
    const transactionId = refund.transactionId;
    if (!transactionId || refund.clawedBack !== null) return null;
    const payment = await this.payments.findPayment(tx, transactionId);
    if (!payment) return null;
    if (payment.providerSubscriptionId && payment.providerSubscriptionId !== lockedSubscriptionId) {
      // The payment was committed after the refund looked for it: its subscription's lock comes after the
      // transaction's here, the one exception to the order. Nothing that holds a subscription's lock waits for
      // a transaction's but an event about this very transaction (a second refund, a redelivered payment).
      await this.subscriptions.lock(tx, payment.providerSubscriptionId);
    }
    const grantJobIds = [transactionId];
    if (payment.providerSubscriptionId && payment.origin !== RENEWAL_ORIGIN) {
      const first = await this.payments.firstPaymentOf(tx, payment.providerSubscriptionId);
      if (first?.providerTransactionId === transactionId) {
        grantJobIds.push(firstPeriodGrantId(payment.providerSubscriptionId));
      }
    }
    const subscriptionId = payment.providerSubscriptionId;
    const clawed = await this.credits.clawBackGrants(tx, {
      jobId: refund.adjustmentId,
      transactionId,
      grantJobIds,
      allowancesOf: subscriptionId
        ? {
            providerSubscriptionId: subscriptionId,
            paidPeriod: (starts) => this.periodPaidBy(tx, payment, starts),
          }
        : undefined,
      // Minor units, not their float ratio: the share is computed exactly (see clawBackShare).
      share: refund.full ? null : { refunded: refund.total, paid: payment.amountTotal },
      // What earlier claw-backs account for of the months reduced for refunds (a subscription's months only),
      // and what the credits left reflect (expired credits at their full-month value).
      ...(subscriptionId && !refund.full
        ? await this.refundsBefore(tx, transactionId, refund.adjustmentId, payment.amountTotal)
        : {}),
      // A chargeback's may be given back when the merchant wins it: what it took from which credits.
      recordSplit: refund.action === CHARGEBACK,
      details: { adjustment_id: refund.adjustmentId, action: refund.action },
    });
    if (!clawed) return null;
    await this.payments.recordClawBack(tx, recordId, clawed.credits);
    if (clawed.applied) {
      await this.audit.record(tx, {
        actor: event.actor ?? webhookActor('billing'),
        action: 'credits.clawed_back',
        userId: await this.identityOf(tx, clawed.userId),
        resourceType: 'billing_adjustment',
        resourceId: recordId,
        details: {
          event_id: event.eventId,
          adjustment_id: refund.adjustmentId,
          transaction_id: transactionId,
          action: refund.action,
          amount: refund.total,
          credits: clawed.credits,
        },
      });
    }
    // A chargeback the merchant already won (its reverse recorded first) gives back what it just took.
    if (refund.action === CHARGEBACK) await this.restoreChargebacks(tx, event, transactionId);
    return clawed;
  }

  /**
   * A chargeback the merchant won gives back what its claw-back took (decision "a chargeback the merchant
   * won", docs/decisions/billing.md): once an approved `chargeback_reverse` of `transactionId` is recorded and
   * the claw-back of a chargeback of it has run, whichever comes second (both hold the transaction's claw-back
   * lock). The credits are the chargebacks' claw-backs less what the rollover rule would have expired of them,
   * in the share the reverses returned of what the chargebacks did (CreditsService.restoreClawBacks); one
   * ledger row keyed on the first approved reverse whose restore has not run, so a redelivery gives nothing
   * twice. The restore's outcome is recorded on the reverse (`restored_credits`, 0 when nothing was due and
   * no row was written): a reverse that gave nothing is done too, and a later chargeback of the payment is
   * not given back under its key.
   */
  private async restoreChargebacks(tx: Tx, event: BillingEvent, transactionId: string): Promise<void> {
    const adjustments = await this.payments.approvedAdjustmentsOf(tx, transactionId, [
      CHARGEBACK,
      CHARGEBACK_REVERSE,
    ]);
    const reverses = adjustments.filter((a) => a.action === CHARGEBACK_REVERSE);
    const chargebacks = adjustments.filter((a) => a.action === CHARGEBACK);
    if (reverses.length === 0 || chargebacks.length === 0) return;
    const payment = await this.payments.findPayment(tx, transactionId);
    if (!payment) return;
    // A reverse whose restore ran (its outcome recorded, 0 included; before the column: its ledger row).
    const recorded = await this.credits.clawBacksOf(
      tx,
      reverses.filter((r) => r.restoredCredits === null).map((r) => r.providerAdjustmentId),
    );
    const reverse = reverses.find((r) => r.restoredCredits === null && !recorded.has(r.providerAdjustmentId));
    if (!reverse) return;
    const sum = (list: typeof adjustments) =>
      list.reduce((total, a) => total + returnedBy(a, payment.amountTotal), 0);
    const restored = await this.credits.restoreClawBacks(tx, {
      jobId: reverse.providerAdjustmentId,
      transactionId,
      clawBackJobIds: chargebacks.map((c) => c.providerAdjustmentId),
      money: { reversed: sum(reverses), charged: sum(chargebacks) },
      details: { adjustment_id: reverse.providerAdjustmentId, action: CHARGEBACK_REVERSE },
    });
    if (!restored) return;
    // Final, also when nothing was due (no ledger row): a later chargeback is not given back under it.
    await this.payments.recordRestore(tx, reverse.id, restored.credits);
    if (!restored.applied) return;
    await this.audit.record(tx, {
      actor: event.actor ?? webhookActor('billing'),
      action: 'credits.clawback_reversed',
      userId: await this.identityOf(tx, restored.userId),
      resourceType: 'billing_adjustment',
      resourceId: reverse.id,
      details: {
        event_id: event.eventId,
        adjustment_id: reverse.providerAdjustmentId,
        transaction_id: transactionId,
        action: CHARGEBACK_REVERSE,
        amount: reverse.amountTotal,
        credits: restored.credits,
        withheld: restored.expired,
      },
    });
  }

  /**
   * Minor units the refunds and chargebacks of `transactionId` other than `adjustmentId` returned whose
   * claw-back already ran (`clawed_back_credits` set, or for a row from before the column its ledger row),
   * whatever their status now; a `full` one counts as the whole payment. A month the allowance job reduced
   * for more than this was reduced for the refund now clawed back too (CreditsService.clawBackGrants).
   * `reflected`: the refunds the credits still left of the payment reflect: the same less what approved
   * `chargeback_reverse`s returned (at most what those chargebacks did), at most the payment.
   */
  private async refundsBefore(
    tx: Tx,
    transactionId: string,
    adjustmentId: string,
    paid: number,
  ): Promise<{ refundedBefore: number; reflected: number }> {
    const adjustments = await this.payments.adjustmentsOf(tx, transactionId, [
      ...CLAWBACK_ACTIONS,
      CHARGEBACK_REVERSE,
    ]);
    const others = adjustments.filter(
      (a) => CLAWBACK_ACTIONS.has(a.action) && a.providerAdjustmentId !== adjustmentId,
    );
    const recorded = await this.credits.clawBacksOf(
      tx,
      others.filter((a) => a.clawedBackCredits === null).map((a) => a.providerAdjustmentId),
    );
    const ran = others.filter((a) => a.clawedBackCredits !== null || recorded.has(a.providerAdjustmentId));
    const sum = (list: typeof adjustments) => list.reduce((total, a) => total + returnedBy(a, paid), 0);
    const refundedBefore = sum(ran);
    // A won chargeback gave back what its claw-back took: the credits left no longer reflect it.
    const won = Math.min(
      sum(adjustments.filter((a) => a.action === CHARGEBACK_REVERSE && a.status === 'approved')),
      sum(ran.filter((a) => a.action === CHARGEBACK)),
    );
    return { refundedBefore, reflected: Math.min(Math.max(refundedBefore - won, 0), paid) };
  }

  /**
   * Of the billing periods of `payment`'s subscription starting at `starts` (those with allowance months),
   * the one `payment` paid: a period whose payment (paymentOfPeriod, what its months read) it is, the nearest
   * of them if several (of two as near, the one starting before it). null when it paid none of them (a
   * proration, the last monthly payment before a switch to annual): its refund takes back no month.
   */
  private async periodPaidBy(db: Db, payment: Payment, starts: Date[]): Promise<Date | null> {
    const subscriptionId = payment.providerSubscriptionId;
    if (!subscriptionId) return null;
    const at = payment.occurredAt.getTime();
    const near = starts
      .filter((start) => Math.abs(start.getTime() - at) <= PAID_PERIOD_TOLERANCE_MS)
      .sort((a, b) => Math.abs(a.getTime() - at) - Math.abs(b.getTime() - at) || a.getTime() - b.getTime());
    for (const start of near) {
      const paid = await this.paymentOfPeriod(db, subscriptionId, start);
      if (paid?.providerTransactionId === payment.providerTransactionId) return start;
    }
    return null;
  }

  /**
   * The payment that paid the billing period of `providerSubscriptionId` starting at `periodStart`: of the
   * subscription's payments of some money that pay a period (its first payment, or a renewal: origin
   * `subscription_recurring`; never a proration or a one-off charge), the one nearest the period start within
   * a month; of two as near, the one at or after the start (nearestPayment).
   */
  private async paymentOfPeriod(db: Db, providerSubscriptionId: string, periodStart: Date) {
    const first = await this.payments.firstPaymentOf(db, providerSubscriptionId);
    const candidates = await this.payments.periodPaymentsNear(
      db,
      providerSubscriptionId,
      periodStart,
      PAID_PERIOD_TOLERANCE_MS,
      { firstTransactionId: first?.providerTransactionId ?? null, periodOrigin: RENEWAL_ORIGIN },
    );
    return nearestPayment(candidates, periodStart) ?? null;
  }

  /**
   * The payment that paid the billing period of `providerSubscriptionId` starting at `periodStart`
   * (paymentOfPeriod), and what approved adjustments of it returned so far: refunds and chargebacks added up
   * (a `full` one as the whole payment, whatever its total), less approved `chargeback_reverse`s (at most
   * what the chargebacks returned), between 0 and the amount paid. The claw-back matches the same way: a
   * refund of a payment takes back the months of the period whose payment this says it is (periodPaidBy), so
   * the refund that takes back a month's grant is the one that reduces a later month (decision "refunded
   * annual period"). null when no recorded payment matches. The caller holds the subscription's lock, which
   * every refund of a subscription's payment takes before it reads the grants: a refund committed before is
   * read here, one applied after reads what the caller granted.
   */
  /**
   * Whether a payment that pays a period (the first payment or a renewal) of `providerSubscriptionId` was
   * made from `from` to `to`: in the allowance job, the period's month 0 came late (a renewal paid after
   * its period's month 1 had begun), so month 1 does not expire it (decision "a past-due period grants once
   * it is paid").
   */
  async periodPaidBetween(db: Db, providerSubscriptionId: string, from: Date, to: Date): Promise<boolean> {
    if (to.getTime() < from.getTime()) return false;
    const first = await this.payments.firstPaymentOf(db, providerSubscriptionId);
    const paid = await this.payments.periodPaymentsBetween(db, providerSubscriptionId, from, to, {
      firstTransactionId: first?.providerTransactionId ?? null,
      periodOrigin: RENEWAL_ORIGIN,
    });
    return paid.length > 0;
  }

  async periodPayment(
    db: Db,
    providerSubscriptionId: string,
    periodStart: Date,
  ): Promise<PeriodPayment | null> {
    const payment = await this.paymentOfPeriod(db, providerSubscriptionId, periodStart);
    if (!payment) return null;
    const paid = payment.amountTotal;
    const adjustments = await this.payments.approvedAdjustmentsOf(db, payment.providerTransactionId, [
      ...CLAWBACK_ACTIONS,
      CHARGEBACK_REVERSE,
    ]);
    const sum = (actions: string[]) =>
      adjustments
        .filter((a) => actions.includes(a.action))
        .reduce((total, a) => total + returnedBy(a, paid), 0);
    // Several partial refunds add up; a won chargeback gives back what the chargeback returned, never more.
    const reversed = Math.min(sum([CHARGEBACK_REVERSE]), sum(['chargeback']));
    const refunded = sum([...CLAWBACK_ACTIONS]) - reversed;
    return {
      transactionId: payment.providerTransactionId,
      paid,
      refunded: Math.min(Math.max(refunded, 0), paid),
    };
  }

  /** A tier change whose period has ended takes effect with the renewal that opens the next period. */
  private async applyDueTierChange(tx: Tx, subscription: Subscription, userId: string): Promise<void> {
    if (!subscription.pendingTier) return;
    const now = new Date();
    if (!(await this.subscriptions.applyPendingTier(tx, subscription.id, now))) return;
    const user = await this.users.lock(tx, userId);
    if (user) await this.tiers.recompute(tx, user, now);
  }

  async adjustment(tx: Tx, event: BillingEvent): Promise<HandlerOutcome> {
    const data = parsePayload(adjustmentSchema, event.data, `${event.eventType} data`);
    // The transaction an approved refund or chargeback takes credits back from, locked before anything is read.
    const clawedBack =
      data.status === 'approved' && CLAWBACK_ACTIONS.has(data.action) ? data.transaction_id : null;
    // A won chargeback gives credits back: the same locks, before anything is read.
    const restored =
      data.status === 'approved' && data.action === CHARGEBACK_REVERSE ? data.transaction_id : null;
    const locked = clawedBack ?? restored;
    const lockedSubscriptionId = locked ? await this.lockForClawBack(tx, locked, data.subscription_id) : null;
    const subscription = data.subscription_id
      ? await this.subscriptions.findByProviderId(tx, data.subscription_id)
      : null;
    const payment = data.transaction_id
      ? await this.payments.findPaymentOwner(tx, data.transaction_id)
      : null;
    const userId =
      subscription?.userId ??
      payment?.userId ??
      (data.customer_id ? ((await this.users.findByCustomerId(tx, data.customer_id))?.id ?? null) : null);

    const record = await this.payments.upsertAdjustment(tx, {
      userId,
      providerAdjustmentId: data.id,
      providerTransactionId: data.transaction_id,
      action: data.action,
      type: data.type ?? null,
      status: data.status,
      amountTotal: data.totals.total,
      currency: data.totals.currency_code ?? data.currency_code ?? 'USD',
      occurredAt: data.created_at ?? event.occurredAt,
      updatedAt: data.updated_at ?? data.created_at ?? event.occurredAt,
    });

    await this.audit.record(tx, {
      actor: event.actor ?? webhookActor('billing'),
      action: event.eventType,
      userId: userId ? await this.identityOf(tx, userId) : null,
      resourceType: 'billing_adjustment',
      resourceId: record.id,
      details: {
        event_id: event.eventId,
        adjustment_id: data.id,
        transaction_id: data.transaction_id,
        action: data.action,
        status: data.status,
        amount: data.totals.total,
        currency: data.totals.currency_code ?? data.currency_code ?? null,
        ...(record.applied ? {} : { reason: 'stale_event' }),
      },
    });
    if (record.applied && clawedBack) {
      const refund = {
        adjustmentId: data.id,
        transactionId: data.transaction_id,
        action: data.action,
        total: data.totals.total,
        full: data.type === FULL_TYPE,
        clawedBack: record.clawedBackCredits,
      };
      await this.clawBack(tx, event, refund, record.id, lockedSubscriptionId);
    }
    if (record.applied && restored) await this.restoreChargebacks(tx, event, restored);
    return record.applied ? { status: 'processed' } : { status: 'skipped', reason: 'stale_event' };
  }

  /**
   * A refund's locks, taken before it reads the payment, the grants or the user (decision "claw-back
   * serialization"): the subscription's, when the adjustment or the payment stored so far names one (what
   * subscription.created and a parked renewal's grant hold), then the transaction's claw-back lock (what its
   * transaction.completed holds). Returns the subscription locked.
   */
  private async lockForClawBack(
    tx: Tx,
    transactionId: string,
    subscriptionId: string | null | undefined,
  ): Promise<string | null> {
    const locked =
      subscriptionId ?? (await this.payments.findPayment(tx, transactionId))?.providerSubscriptionId ?? null;
    if (locked) await this.subscriptions.lock(tx, locked);
    await this.payments.lockTransaction(tx, transactionId);
    return locked;
  }

  private async ownerOf(
    tx: Tx,
    customData: Record<string, unknown> | null | undefined,
    customerId: string | null,
    at: Date,
  ): Promise<string | null> {
    const owner = await this.owners.resolve(tx, { customData, customerId, at });
    return owner.ok ? owner.userId : null;
  }

  private async identityOf(tx: Tx, userId: string): Promise<string | null> {
    return (await this.users.findIdentity(tx, userId))?.identityUserId ?? null;
  }
}
