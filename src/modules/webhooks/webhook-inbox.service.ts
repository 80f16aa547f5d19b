import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { Injectable, Logger } from '@nestjs/common';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { AuditService, webhookActor } from '../audit/audit.service.js';

export type WebhookProvider = 'identity' | 'billing';

export interface InboundEvent {
  eventId: string;
  eventType: string;
  occurredAt?: Date | null;
  /** The parsed raw payload, archived as received. */
  payload: Prisma.InputJsonValue;
}

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
 * plus a `webhook.failed` audit entry are written in a separate transaction before the error propagates.
 */
@Injectable()
export class WebhookInboxService {
  private readonly logger = new Logger(WebhookInboxService.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {}

  async process(provider: WebhookProvider, event: InboundEvent, handler: EventHandler): Promise<InboxResult> {
    try {
      const result = await this.prisma.$transaction(async (tx) => {
        // Concurrent deliveries of one id wait here on the primary key until the first commits or rolls back.
        const claimed = await tx.$queryRaw<{ event_id: string }[]>`
          INSERT INTO processed_webhook_events (provider, event_id, event_type)
          VALUES (${provider}, ${event.eventId}, ${event.eventType})
          ON CONFLICT DO NOTHING
          RETURNING event_id`;
        if (claimed.length === 0) return { duplicate: true, outboxIds: [] };

        const outboxIds: string[] = [];
        const outcome = await handler(tx, outboxIds);
        await this.archive(tx, provider, event, outcome.status === 'processed' ? 'PROCESSED' : 'SKIPPED', {
          error: outcome.status === 'skipped' ? outcome.reason : null,
          processed: true,
        });
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

  private async recordFailure(provider: WebhookProvider, event: InboundEvent, err: unknown): Promise<void> {
    const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    try {
      await this.prisma.$transaction(async (tx) => {
        await this.archive(tx, provider, event, 'FAILED', {
          error: message.slice(0, 2000),
          processed: false,
        });
        await this.audit.record(tx, {
          actor: webhookActor(provider),
          action: 'webhook.failed',
          resourceType: 'webhook_event',
          resourceId: event.eventId,
          details: { provider, event_id: event.eventId, event_type: event.eventType, error: message },
        });
      });
    } catch (recordErr) {
      // The database itself is down: the provider retries and we record the failure then.
      this.logger.error(
        { err: (recordErr as Error).message, provider, event_id: event.eventId },
        'could not record webhook failure',
      );
    }
  }

  /** One archive row per (provider, event id); retries update it and count attempts. */
  private archive(
    tx: Tx,
    provider: WebhookProvider,
    event: InboundEvent,
    status: 'PROCESSED' | 'SKIPPED' | 'FAILED',
    extra: { error: string | null; processed: boolean },
  ) {
    const processedAt = extra.processed ? new Date() : null;
    return tx.webhookEvent.upsert({
      where: { provider_eventId: { provider, eventId: event.eventId } },
      create: {
        provider,
        eventId: event.eventId,
        eventType: event.eventType,
        payload: event.payload,
        status,
        error: extra.error,
        occurredAt: event.occurredAt ?? null,
        processedAt,
      },
      update: { status, error: extra.error, attempts: { increment: 1 }, processedAt, payload: event.payload },
    });
  }
}
