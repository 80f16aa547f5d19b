import { createHash } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { storableText } from '../../common/validation/unicode.js';
import { MetricsService } from '../../infra/metrics/metrics.service.js';
import { AuditService, webhookActor } from '../audit/audit.service.js';
import type { WebhookProvider } from './webhook-inbox.repository.js';

export interface Refusal {
  /** Stable reason code: invalid_signature, not_json, no_event_id, unstorable, invalid_payload, ... */
  reason: string;
  /** The raw body, for its SHA-256 in the audit entry (the body itself is never stored). */
  body?: Buffer;
  /** The event id when the body or the headers named one. */
  eventId?: string | null;
  detail?: string;
}

/**
 * Every delivery a webhook receiver refuses leaves a trace (issue 13 item 8): a warn-level log line with the
 * reason and a `webhook_refusals_total{provider,reason}` count. An authentic body that cannot be archived (not
 * JSON, no event id, content the store refuses) also gets a `webhook.failed` audit entry with the body's
 * SHA-256, so an operator can match it with the provider's delivery log. An unsigned delivery is never
 * audited: anyone could flood the audit log with them.
 *
 * The event id and the detail are the sender's text, and the refusal may be for the very reason that they
 * hold what PostgreSQL cannot store (a NUL, an unpaired surrogate): both are written in their storableText
 * form (`\u0000`-style escapes) in the log line and the audit entry, which the body digest ties to the
 * exact bytes. Otherwise the insert failed and the refusal left no audit entry.
 */
@Injectable()
export class WebhookRefusalsService {
  private readonly logger = new Logger(WebhookRefusalsService.name);

  constructor(
    private readonly metrics: MetricsService,
    private readonly audit: AuditService,
  ) {}

  /** An unsigned or badly signed delivery, or one refused after archiving (the inbox audits those). */
  refused(provider: WebhookProvider, refusal: Refusal): void {
    this.metrics.webhookRefusals.inc({ provider, reason: refusal.reason });
    this.logger.warn(
      {
        provider,
        reason: refusal.reason,
        event_id: refusal.eventId ? storableText(refusal.eventId) : undefined,
        detail: refusal.detail === undefined ? undefined : storableText(refusal.detail),
        bytes: refusal.body?.length,
      },
      `${provider} webhook refused: ${refusal.reason}`,
    );
  }

  /** An authentic delivery that cannot be archived: refused() plus a `webhook.failed` audit entry. */
  async unarchivable(provider: WebhookProvider, refusal: Refusal): Promise<void> {
    this.refused(provider, refusal);
    const digest = createHash('sha256')
      .update(refusal.body ?? Buffer.alloc(0))
      .digest('hex');
    const eventId = refusal.eventId ? storableText(refusal.eventId) : null;
    await this.audit
      .recordStandalone({
        actor: webhookActor(provider),
        action: 'webhook.failed',
        resourceType: 'webhook_event',
        resourceId: eventId ?? `sha256:${digest}`,
        details: {
          provider,
          reason: refusal.reason,
          body_digest: `sha256:${digest}`,
          event_id: eventId,
        },
      })
      .catch((err: Error) =>
        this.logger.error({ provider, err: err.message }, 'could not audit a refused webhook delivery'),
      );
  }
}
