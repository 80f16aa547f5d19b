import { Injectable, Logger } from '@nestjs/common';
import { UnrecoverableError } from 'bullmq';
import { z } from 'zod';
import { AppConfig } from '../../../config/app-config.js';
import { recordableError } from '../../../common/errors/internal-text.js';
import { MetricsService } from '../../../infra/metrics/metrics.service.js';
import { PrismaService, type Tx } from '../../../infra/prisma/prisma.service.js';
import { UnitOfWork } from '../../../infra/prisma/unit-of-work.js';
import { isOutageFailure } from '../../../infra/queue/job-failure.js';
import type { Subscription } from '../../../generated/prisma/client.js';
import { AuditService, systemActor } from '../../audit/audit.service.js';
import { BillingApiClient, BillingRejectedError } from '../billing-api.client.js';
import { UnknownPriceError } from '../billing.errors.js';
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

/** Columns a reconcile may move without changing anything: the newer-wins bookkeeping and Prisma's stamp. */
const BOOKKEEPING = new Set(['lastEventId', 'lastEventAt', 'updatedAt']);

/** A reconcile that changed nothing: thrown to roll its transaction back (no audit entry, no write). */
class NothingChanged extends Error {}

/** Subscriptions named in the failure of a run that could not reconcile some (job_runs.last_error). */
const NAMED_FAILURES = 5;

export interface DriftRun {
  checked: number;
  reconciled: number;
  /** Subscriptions whose reconcile failed (logged, counted in billing_drift_failures_total); the others went on. */
  failed: number;
  reason?: string;
}

/**
 * A scheduled run that could not reconcile some subscriptions: the run went through all of them, then ends
 * failed (job_runs, alert SubscriptionScheduledJobFailed) without BullMQ retrying it, since the next hourly
 * run tries them again.
 */
export class DriftIncompleteError extends UnrecoverableError {
  constructor(run: DriftRun, failures: string[]) {
    super(
      `drift check: ${run.failed} of ${run.checked} subscriptions could not be reconciled ` +
        `(${failures.join('; ')}${run.failed > failures.length ? '; ...' : ''}); the others were`,
    );
    this.name = 'DriftIncompleteError';
  }
}

/**
 * Issue 17 item 2: the hourly drift check. A subscription that should have renewed (ACTIVE/TRIALING past
 * its period end by BILLING_DRIFT_GRACE_MINUTES with no event since) or a PAST_DUE/PAUSED one untouched for
 * a week is read back from the provider. When the provider's state is newer it goes through the same state
 * machine as a synthetic event `reconcile:<subscription id>:<provider updated_at>` (newer-wins makes a repeat
 * a no-op; a synthetic event never grants credits) and is audited `billing.reconciled` with what changed. A
 * reconcile that changes nothing (the provider agrees with us) is rolled back: no audit entry, no write. A
 * PAST_DUE or PAUSED subscription is read back about once a day once it is stale (see drifting).
 *
 * One subscription that cannot be reconciled (a price missing from BILLING_PRICE_TIERS, a provider answer
 * off the contract, a database error of its own) is logged, counted in `billing_drift_failures_total` and
 * passed over; the run goes on with the others. An outage (the provider or the database unreachable) stops
 * the run as before: the next subscription would fail the same way.
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
    private readonly metrics: MetricsService,
  ) {}

  /** The scheduled job: check(), ending failed (not retried) when some subscriptions could not be reconciled. */
  async run(now: Date = new Date(), slot: Date = now): Promise<DriftRun> {
    const failures: string[] = [];
    const result = await this.check(now, failures, slot);
    if (result.failed > 0) throw new DriftIncompleteError(result, failures);
    return result;
  }

  /**
   * One pass over the candidates. `slot` is the time of the run's schedule slot (the scheduled job's enqueue
   * time; `now` by default): its UTC hour picks which long PAUSED/PAST_DUE subscriptions are read back
   * (SubscriptionsRepository.drifting), so a run that starts late in its hour, or a retry of it, reads the
   * same ones. `failures` collects the first few that failed (subscription id and the
   * recordable error), for the scheduled run's failure.
   */
  async check(now: Date = new Date(), failures: string[] = [], slot: Date = now): Promise<DriftRun> {
    if (!this.config.billing.backfillEnabled) {
      return { checked: 0, reconciled: 0, failed: 0, reason: 'not_configured' };
    }
    const renewalCutoff = new Date(now.getTime() - this.config.billing.driftGraceMinutes * 60_000);
    const staleBefore = new Date(now.getTime() - WEEK_MS);
    let checked = 0;
    let reconciled = 0;
    let failed = 0;
    let after: string | undefined;
    for (;;) {
      const candidates = await this.subscriptions.drifting(
        this.prisma,
        renewalCutoff,
        staleBefore,
        slot.getUTCHours(),
        { after, limit: BATCH },
      );
      for (const candidate of candidates) {
        checked += 1;
        try {
          if (await this.reconcile(candidate, now)) reconciled += 1;
        } catch (err) {
          // An outage throws: the job fails and retries later; nothing was changed.
          if (isOutageFailure(err)) throw err;
          failed += 1;
          this.failed(candidate, err, failures);
        }
      }
      if (candidates.length < BATCH) break;
      after = candidates[candidates.length - 1].id;
    }
    if (reconciled > 0 || failed > 0) {
      this.logger.log({ checked, reconciled, failed }, 'billing drift check done');
    }
    return { checked, reconciled, failed };
  }

  /** One subscription could not be reconciled: logged and counted; the run goes on with the others. */
  private failed(candidate: LapsedSubscription, err: unknown, failures: string[]): void {
    const reason = err instanceof UnknownPriceError ? 'unknown_price' : 'error';
    this.metrics.billingDriftFailures.inc({ reason });
    this.logger.error(
      {
        subscription_id: candidate.provider_subscription_id,
        reason,
        err: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      },
      'drift check: could not reconcile this subscription; the others go on',
    );
    if (failures.length < NAMED_FAILURES) {
      failures.push(`${candidate.provider_subscription_id}: ${recordableError(err)}`);
    }
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
      actor: systemActor('billing-drift'),
    };
    try {
      return await this.uow.run((tx) => this.apply(tx, candidate, event));
    } catch (err) {
      if (err instanceof NothingChanged) return false;
      throw err;
    }
  }

  /**
   * The provider's state through the state machine, in the caller's transaction. When it changed nothing
   * (no column but the newer-wins bookkeeping, not the owner's row: the provider agrees with us, or it is
   * older than what we hold), NothingChanged rolls the transaction back: the state machine's audit entry
   * and the bookkeeping go with it, so an hourly re-read of a long PAUSED or PAST_DUE subscription writes
   * nothing. A `reconcile:` event id wins a tie on the event time against the provider's own `evt_` id; it
   * used to be applied (and audited as a `subscription.paused` webhook) on every run.
   */
  private async apply(
    tx: Tx,
    candidate: LapsedSubscription,
    event: { eventId: string; eventType: string; occurredAt: Date; data: unknown; actor: string },
  ): Promise<boolean> {
    const id = candidate.provider_subscription_id;
    // The state machine's own lock, taken first (re-entrant): nothing changes the row between the reads.
    await this.subscriptions.lock(tx, id);
    const before = await this.subscriptions.findByProviderId(tx, id);
    if (!before) return false;
    const ownerBefore = await this.ownerState(tx, before.userId);
    await this.state.handle(tx, event);
    const after = await this.subscriptions.findByProviderId(tx, id);
    if (!after) return false;
    if (sameRow(before, after) && ownerBefore === (await this.ownerState(tx, after.userId))) {
      throw new NothingChanged();
    }
    const fields = changedFields(before, after);
    if (fields.length === 0) return false;
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
        previous_status: before.status,
        tier: after.tier,
      },
    });
    return true;
  }

  /** What the state machine may change of the owner's row: the tier it derives, the customer id it links. */
  private async ownerState(tx: Tx, userId: string): Promise<string> {
    const user = await tx.user.findUnique({
      where: { id: userId },
      select: { currentTier: true, billingCustomerId: true },
    });
    return JSON.stringify(user);
  }
}

/** Whether two reads of a subscription agree on every column but the bookkeeping (BOOKKEEPING). */
function sameRow(a: Subscription, b: Subscription): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) {
    if (BOOKKEEPING.has(key)) continue;
    const [x, y] = [(a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]];
    if (JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

function changedFields(before: Subscription, after: Subscription): string[] {
  const same = (a: unknown, b: unknown) =>
    a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b;
  return WATCHED.filter((key) => !same(before[key], after[key]))
    .map((key) => FIELD_NAMES[key])
    .sort();
}
