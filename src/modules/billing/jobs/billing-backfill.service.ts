import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { PrismaService } from '../../../infra/prisma/prisma.service.js';
import { BillingApiClient } from '../billing-api.client.js';
import { InvalidWebhookPayloadError } from '../billing.errors.js';
import { BillingWebhookService } from '../intake/billing-webhook.service.js';
import { SyncCheckpointsRepository } from './sync-checkpoints.repository.js';

export const BACKFILL = 'billing-backfill';
const PER_PAGE = 200;
/** At most this many pages per run (10,000 events); the next run goes on from the checkpoint. */
const MAX_PAGES = 50;
/**
 * How long a run holds the backfill without renewing (it renews after every page). Longer than one page's
 * worst case: the provider call, every attempt timing out, ends within 5 minutes (MAX_HTTP_TIMEOUT_MS is
 * derived so), then up to 200 intake statements. Also how long a crashed run keeps the next one waiting.
 */
export const BACKFILL_LEASE_MS = 10 * 60_000;

export interface BackfillResult {
  ran: boolean;
  /**
   * not_configured; not_due (the interval has not passed since the last finished run); running (another
   * run, on this or another replica, holds the backfill); lease_lost (this run held it longer than its
   * lease without renewing, another run took over, and this one stopped).
   */
  reason?: 'not_configured' | 'not_due' | 'running' | 'lease_lost';
  accepted: number;
  duplicates: number;
  refused: number;
  checkpoint: string | null;
}

/**
 * Issue 17 item 1: a webhook that was never delivered, or failed until the provider gave up, is fetched
 * from the provider's event log (Paddle `GET /events`, 90 days) and fed through the same intake as a
 * delivered one (claim, archive, worker handler, exactly once). Pages from a stored checkpoint; an event
 * the intake refuses (it breaks the contract) is archived FAILED and passed; an outage of the provider or
 * the database stops the run with the checkpoint where it was, and the next run resumes from there.
 * One run at a time across replicas: a run claims the backfill's lease at its start (see
 * SyncCheckpointsRepository), so a run longer than the tick interval is not paged again by the next tick.
 */
@Injectable()
export class BillingBackfillService {
  private readonly logger = new Logger(BillingBackfillService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly prisma: PrismaService,
    private readonly api: BillingApiClient,
    private readonly webhooks: BillingWebhookService,
    private readonly checkpoints: SyncCheckpointsRepository,
  ) {}

  /**
   * The scheduler ticks every minute; a run happens when BILLING_BACKFILL_INTERVAL_MINUTES have passed
   * since the last finished run (`force` skips that wait) and no other run holds the backfill.
   */
  async run(now: Date = new Date(), options: { force?: boolean } = {}): Promise<BackfillResult> {
    const result: BackfillResult = { ran: false, accepted: 0, duplicates: 0, refused: 0, checkpoint: null };
    const intervalMs = this.config.billing.backfillIntervalMinutes * 60_000;
    // A minute tick may fire a little early: half a minute of slack.
    const dueBefore = options.force ? null : new Date(now.getTime() - (intervalMs - 30_000));
    const claimed = this.config.billing.backfillEnabled
      ? await this.checkpoints.claim(this.prisma, BACKFILL, dueBefore, BACKFILL_LEASE_MS)
      : null;
    if (!claimed) {
      const state = await this.checkpoints.find(this.prisma, BACKFILL);
      const skipped = { ...result, checkpoint: state?.checkpoint ?? this.config.billing.backfillSince };
      if (!this.config.billing.backfillEnabled) return { ...skipped, reason: 'not_configured' };
      const held = state?.leaseUntil && state.leaseUntil.getTime() > Date.now();
      return { ...skipped, reason: held ? 'running' : 'not_due' };
    }
    let lease = claimed.leaseUntil;
    let after = claimed.checkpoint ?? this.config.billing.backfillSince;
    try {
      for (let page = 0; page < MAX_PAGES; page += 1) {
        const events = await this.api.events(after, PER_PAGE);
        for (const event of events.data) {
          await this.feed(event, result);
          after = event.event_id;
        }
        const renewed = await this.checkpoints.advance(
          this.prisma,
          BACKFILL,
          lease,
          after,
          BACKFILL_LEASE_MS,
        );
        if (!renewed) return this.lostLease(result, after);
        lease = renewed;
        if (!events.meta.pagination.has_more || events.data.length === 0) break;
      }
      if (!(await this.checkpoints.finished(this.prisma, BACKFILL, lease, now, result.accepted))) {
        return this.lostLease(result, after);
      }
    } catch (err) {
      // Give the backfill up at once, so the next tick may retry (an expired lease would free it later).
      await this.checkpoints.release(this.prisma, BACKFILL, lease).catch((releaseErr: Error) => {
        this.logger.warn({ err: releaseErr.message }, 'billing backfill lease not released');
      });
      throw err;
    }
    if (result.accepted > 0 || result.refused > 0) {
      this.logger.log({ ...result, checkpoint: after }, 'billing backfill fed missed events');
    }
    return { ...result, ran: true, checkpoint: after };
  }

  /** Another run took the backfill over (this one outlived its lease): it goes on from the checkpoint. */
  private lostLease(result: BackfillResult, after: string | null): BackfillResult {
    this.logger.warn({ ...result, checkpoint: after }, 'billing backfill lease taken over; run stopped');
    return { ...result, ran: true, reason: 'lease_lost', checkpoint: after };
  }

  private async feed(event: unknown, result: BackfillResult): Promise<void> {
    const envelope = this.webhooks.envelopeOf(event);
    if (!envelope) {
      result.refused += 1;
      this.logger.warn(
        { event_id: (event as { event_id?: unknown })?.event_id },
        'backfill event cannot be stored',
      );
      return;
    }
    try {
      const acceptance = await this.webhooks.ingest(envelope, 'backfill');
      if (acceptance.duplicate) result.duplicates += 1;
      else result.accepted += 1;
    } catch (err) {
      // Refused at intake: archived FAILED (visible, replayable); the run goes on past it.
      if (!(err instanceof InvalidWebhookPayloadError)) throw err;
      result.refused += 1;
    }
  }
}
