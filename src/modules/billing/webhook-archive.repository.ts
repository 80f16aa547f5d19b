import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../infra/prisma/prisma.service.js';
import type { WebhookEvent } from '../../generated/prisma/client.js';

/** Reason under which an event for a not-yet-known subscription is parked (archived SKIPPED). */
export const PARKED_REASON = 'unknown_subscription';

const PRUNE_BATCH = 5000;
const PARKED_WINDOW_MS = 30 * 86_400_000;

@Injectable()
export class WebhookArchiveRepository {
  /**
   * Parked events of one subscription, oldest first: they arrived before any event that could tie the
   * subscription to a user, and are replayed once the subscription row exists.
   */
  parkedFor(
    tx: Tx,
    providerSubscriptionId: string,
    now: Date,
    kind: 'subscription.' | 'transaction.' = 'subscription.',
  ): Promise<WebhookEvent[]> {
    // A subscription's id is data.id; a transaction names its subscription in data.subscription_id.
    const path = kind === 'subscription.' ? ['data', 'id'] : ['data', 'subscription_id'];
    return tx.webhookEvent.findMany({
      where: {
        provider: 'billing',
        status: 'SKIPPED',
        // Bounded by the (status, received_at) index: the provider delivers a subscription's events
        // within days, so older parked rows cannot belong to a subscription created now.
        receivedAt: { gte: new Date(now.getTime() - PARKED_WINDOW_MS) },
        error: PARKED_REASON,
        eventType: { startsWith: kind },
        payload: { path, equals: providerSubscriptionId },
      },
      orderBy: [{ occurredAt: 'asc' }, { eventId: 'asc' }],
    });
  }

  async markReplayed(tx: Tx, id: string, at: Date): Promise<void> {
    await tx.webhookEvent.update({
      where: { id },
      data: { status: 'PROCESSED', error: null, processedAt: at },
    });
  }

  /** Deletes archive rows received before `before`, in batches so one run never holds a huge lock. */
  async pruneArchive(db: Db, before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await db.$executeRaw`
        DELETE FROM webhook_events WHERE id IN (
          SELECT id FROM webhook_events WHERE received_at < ${before} LIMIT ${PRUNE_BATCH})`;
      total += deleted;
      if (deleted < PRUNE_BATCH) return total;
    }
  }

  /** Deletes dedupe records older than `before` (a replay older than that is no longer recognised). */
  async pruneProcessed(db: Db, before: Date): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await db.$executeRaw`
        DELETE FROM processed_webhook_events WHERE (provider, event_id) IN (
          SELECT provider, event_id FROM processed_webhook_events WHERE processed_at < ${before}
          LIMIT ${PRUNE_BATCH})`;
      total += deleted;
      if (deleted < PRUNE_BATCH) return total;
    }
  }
}
