import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../infra/prisma/prisma.service.js';
import type { Prisma } from '../../generated/prisma/client.js';

export type WebhookProvider = 'identity' | 'billing';

export interface InboundEvent {
  eventId: string;
  eventType: string;
  occurredAt?: Date | null;
  /** The parsed raw payload, archived as received. */
  payload: Prisma.InputJsonValue;
}

/** The inbox's tables: processed_webhook_events (the claim) and webhook_events (the archive). */
@Injectable()
export class WebhookInboxRepository {
  /**
   * Claims the event id; false when it was already claimed (a redelivery). Concurrent deliveries of one
   * id wait here on the primary key until the first commits (false) or rolls back (true).
   */
  async claim(tx: Tx, provider: WebhookProvider, event: InboundEvent): Promise<boolean> {
    const claimed = await tx.$queryRaw<{ event_id: string }[]>`
      INSERT INTO processed_webhook_events (provider, event_id, event_type)
      VALUES (${provider}, ${event.eventId}, ${event.eventType})
      ON CONFLICT DO NOTHING
      RETURNING event_id`;
    return claimed.length > 0;
  }

  /** The outcome of a handled event, in the claim's transaction. One row per (provider, event id). */
  async archiveOutcome(
    tx: Tx,
    provider: WebhookProvider,
    event: InboundEvent,
    status: 'PROCESSED' | 'SKIPPED',
    error: string | null,
  ): Promise<void> {
    const processedAt = new Date();
    await tx.webhookEvent.upsert({
      where: { provider_eventId: { provider, eventId: event.eventId } },
      create: {
        provider,
        eventId: event.eventId,
        eventType: event.eventType,
        payload: event.payload,
        status,
        error,
        occurredAt: event.occurredAt ?? null,
        processedAt,
      },
      update: { status, error, attempts: { increment: 1 }, processedAt, payload: event.payload },
    });
  }

  /**
   * Archives a failed attempt as FAILED, unless the event has been handled meanwhile: a concurrent
   * delivery that waited on the claim may have processed and committed it after this attempt rolled
   * back, and its PROCESSED/SKIPPED row must not be overwritten. The archive status decides when the
   * row exists (ON CONFLICT re-reads the latest committed row); the claim decides when the archive row
   * is gone (pruned). Returns false when nothing was written.
   */
  async archiveFailure(
    db: Db,
    provider: WebhookProvider,
    event: InboundEvent,
    error: string,
  ): Promise<boolean> {
    const written = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO webhook_events (id, provider, event_id, event_type, payload, status, error, occurred_at)
      SELECT gen_random_uuid(), ${provider}, ${event.eventId}, ${event.eventType},
             ${JSON.stringify(event.payload)}::jsonb, 'FAILED'::"WebhookEventStatus", ${error},
             ${event.occurredAt ?? null}::timestamptz
      WHERE NOT EXISTS (
        SELECT 1 FROM processed_webhook_events WHERE provider = ${provider} AND event_id = ${event.eventId})
      ON CONFLICT (provider, event_id) DO UPDATE
        SET status = 'FAILED'::"WebhookEventStatus", error = EXCLUDED.error,
            attempts = webhook_events.attempts + 1, processed_at = NULL, payload = EXCLUDED.payload
        WHERE webhook_events.status NOT IN ('PROCESSED', 'SKIPPED')
      RETURNING id`;
    return written.length > 0;
  }
}
