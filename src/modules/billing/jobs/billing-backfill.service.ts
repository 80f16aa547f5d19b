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

export interface BackfillResult {
  ran: boolean;
  reason?: 'not_configured' | 'not_due';
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

  /** The scheduler ticks every minute; a run happens when BILLING_BACKFILL_INTERVAL_MINUTES have passed. */
  async run(now: Date = new Date(), options: { force?: boolean } = {}): Promise<BackfillResult> {
    const state = await this.checkpoints.find(this.prisma, BACKFILL);
    let after = state?.checkpoint ?? this.config.billing.backfillSince;
    const result: BackfillResult = { ran: false, accepted: 0, duplicates: 0, refused: 0, checkpoint: after };
    if (!this.config.billing.backfillEnabled) return { ...result, reason: 'not_configured' };
    const intervalMs = this.config.billing.backfillIntervalMinutes * 60_000;
    // A minute tick may fire a little early: half a minute of slack.
    if (
      !options.force &&
      state?.lastRunAt &&
      now.getTime() - state.lastRunAt.getTime() < intervalMs - 30_000
    ) {
      return { ...result, reason: 'not_due' };
    }
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const events = await this.api.events(after, PER_PAGE);
      for (const event of events.data) {
        await this.feed(event, result);
        after = event.event_id;
      }
      if (after) await this.checkpoints.advance(this.prisma, BACKFILL, after);
      if (!events.meta.pagination.has_more || events.data.length === 0) break;
    }
    await this.checkpoints.finished(this.prisma, BACKFILL, now, result.accepted);
    if (result.accepted > 0 || result.refused > 0) {
      this.logger.log({ ...result, checkpoint: after }, 'billing backfill fed missed events');
    }
    return { ...result, ran: true, checkpoint: after };
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
