import { recordableError } from '../../common/errors/internal-text.js';
import { Injectable, Logger } from '@nestjs/common';
import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import { AuditService, webhookActor } from '../audit/audit.service.js';
import {
  type InboundEvent,
  WebhookInboxRepository,
  type WebhookProvider,
} from './webhook-inbox.repository.js';

export type { InboundEvent, WebhookProvider } from './webhook-inbox.repository.js';

export type HandlerOutcome = { status: 'processed' } | { status: 'skipped'; reason: string };

export interface InboxResult {
  /** true when this event id was already processed: nothing happened now. */
  duplicate: boolean;
  outcome?: HandlerOutcome;
  /** Outbox entries the handler wrote; dispatched after commit. */
  outboxIds: string[];
}

export type EventHandler = (tx: Tx, outbox: string[]) => Promise<HandlerOutcome>;

/**
 * Exactly-once processing of verified webhooks. In ONE transaction: claim the event id in
 * processed_webhook_events (a redelivery is a no-op), archive the payload, run the handler. If the handler
 * throws, everything rolls back (the provider's retry will process the event), and a FAILED archive row
 * plus a `webhook.failed` audit entry are written in a separate transaction before the error propagates,
 * unless another delivery of the event has been handled in the meantime.
 */
@Injectable()
export class WebhookInboxService {
  private readonly logger = new Logger(WebhookInboxService.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly inbox: WebhookInboxRepository,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  async process(provider: WebhookProvider, event: InboundEvent, handler: EventHandler): Promise<InboxResult> {
    try {
      const result = await this.prisma.$transaction(async (tx) => {
        // Concurrent deliveries of one id wait here until the first commits or rolls back.
        if (!(await this.inbox.claim(tx, provider, event))) return { duplicate: true, outboxIds: [] };

        const outboxIds: string[] = [];
        const outcome = await handler(tx, outboxIds);
        await this.inbox.archiveOutcome(
          tx,
          provider,
          event,
          outcome.status === 'processed' ? 'PROCESSED' : 'SKIPPED',
          outcome.status === 'skipped' ? outcome.reason : null,
        );
        return { duplicate: false, outcome, outboxIds };
      });
      const outcome = result.duplicate ? 'duplicate' : (result.outcome?.status ?? 'processed');
      this.metrics.webhookEvents.inc({ provider, outcome });
      return result;
    } catch (err) {
      this.metrics.webhookEvents.inc({ provider, outcome: 'failed' });
      await this.recordFailure(provider, event, err);
      throw err;
    }
  }

  /**
   * The failure record and its `webhook.failed` audit entry. When a concurrent delivery handled the event
   * after this attempt rolled back, nothing is written: the event was not lost, so there is nothing for
   * an operator to act on, and the archive keeps the successful outcome.
   */
  private async recordFailure(provider: WebhookProvider, event: InboundEvent, err: unknown): Promise<void> {
    // Never a stack trace, file path or SQL in the record or the audit entry; the log keeps it all.
    const message = recordableError(err);
    const full = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    if (message !== full.slice(0, 2000)) {
      this.logger.error({ provider, event_id: event.eventId, err: full }, 'webhook handling failed');
    }
    try {
      const recorded = await this.prisma.$transaction(async (tx) => {
        if (!(await this.inbox.archiveFailure(tx, provider, event, message.slice(0, 2000)))) return false;
        await this.audit.record(tx, {
          actor: webhookActor(provider),
          action: 'webhook.failed',
          resourceType: 'webhook_event',
          resourceId: event.eventId,
          details: { provider, event_id: event.eventId, event_type: event.eventType, error: message },
        });
        return true;
      });
      if (!recorded) {
        this.logger.warn(
          { provider, event_id: event.eventId, err: full },
          'webhook attempt failed, but another delivery of the event was handled meanwhile; failure not recorded',
        );
      }
    } catch (recordErr) {
      // The database itself is down: the provider retries and we record the failure then.
      this.logger.error(
        { err: (recordErr as Error).message, provider, event_id: event.eventId },
        'could not record webhook failure',
      );
    }
  }
}
