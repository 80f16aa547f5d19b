import type { IncomingHttpHeaders } from 'node:http';
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { z } from 'zod';
import { AppConfig } from '../../../config/app-config.js';
import { MetricsService } from '../../../infra/metrics/metrics.service.js';
import type { Tx } from '../../../infra/prisma/prisma.service.js';
import type { EmailMessage, Prisma } from '../../../generated/prisma/client.js';
import { AuditService, webhookActor } from '../../audit/audit.service.js';
import { StandardWebhooksVerifier } from '../../webhooks/standard-webhooks.js';
import { InvalidWebhookPayloadError } from '../../webhooks/webhook-payload.error.js';
import {
  type HandlerOutcome,
  type StoredEvent,
  WebhookInboxService,
} from '../../webhooks/webhook-inbox.service.js';
import { WebhookRefusalsService } from '../../webhooks/webhook-refusals.service.js';
import { UsersRepository } from '../../users/users.repository.js';
import { type DeliveryStatus, EmailRepository } from '../email.repository.js';
import { isSuppressibleAddress, normalizeAddress } from '../send-policy.js';
import {
  bouncedData,
  dataSchemaFor,
  emailEnvelope,
  emailEventData,
  isPermanentBounce,
} from './email-events.js';
import { EmailSuppressionsRepository, type SuppressionReason } from './suppressions.repository.js';

export const COMPLAINT_SOURCE = 'complaint';

export interface EmailWebhookReceipt {
  received: true;
  event_id: string;
  status: 'accepted' | 'duplicate';
}

/**
 * POST /webhooks/email: the e-mail provider's (Resend's) delivery events, through the same pipeline as
 * billing and identity: Standard Webhooks verification (401, nothing stored), the envelope and data check
 * (400: archived FAILED, `webhook.failed`), then ONE intake statement (claim on the Svix message id +
 * archive RECEIVED, the raw payload); the worker applies the event with the handler registered here.
 *
 * Effects: a permanent bounce suppresses the address (a transient one is recorded on the message only);
 * a complaint suppresses the address, withdraws marketing consent (consent history row) and is audited
 * `email.complaint` once per message; delivered / delivery_delayed update the message's delivery status.
 */
@Injectable()
export class EmailWebhookService implements OnModuleInit {
  private readonly logger = new Logger(EmailWebhookService.name);
  private readonly verifier: StandardWebhooksVerifier;

  constructor(
    config: AppConfig,
    refusals: WebhookRefusalsService,
    private readonly inbox: WebhookInboxService,
    private readonly messages: EmailRepository,
    private readonly suppressions: EmailSuppressionsRepository,
    private readonly consent: UsersRepository,
    private readonly audit: AuditService,
    private readonly metrics: MetricsService,
  ) {
    this.verifier = new StandardWebhooksVerifier(
      'email',
      'EMAIL_WEBHOOK_SECRET',
      [config.email.webhookSecret, config.email.previousWebhookSecret],
      refusals,
    );
  }

  onModuleInit(): void {
    this.inbox.register('email', (tx, stored) => this.apply(tx, stored));
  }

  async receive(rawBody: Buffer | undefined, headers: IncomingHttpHeaders): Promise<EmailWebhookReceipt> {
    const { id, timestamp, payload } = await this.verifier.verify(rawBody, headers);
    // The archive keeps the raw payload (SPEC); the checks below read what the worker and a replay will.
    const envelope = emailEnvelope.safeParse(payload);
    const eventType = envelope.success ? envelope.data.type : 'invalid';
    const created = envelope.success && envelope.data.created_at ? new Date(envelope.data.created_at) : null;
    // A date PostgreSQL cannot store (or no date) is not the sender's fault to refuse: the signed time is used.
    const occurredAt = created && storableDate(created) ? created : timestamp;
    const inbound = { eventId: id, eventType, occurredAt, payload: payload as Prisma.InputJsonValue };

    const schema = envelope.success ? dataSchemaFor(envelope.data.type) : null;
    const data = schema && envelope.success ? schema.safeParse(envelope.data.data) : null;
    const refusal = !envelope.success
      ? invalidPayload(envelope.error)
      : data && !data.success
        ? invalidPayload(data.error)
        : null;
    if (refusal) {
      await this.inbox.refuse('email', inbound, refusal);
      throw refusal;
    }
    const acceptance = await this.inbox.accept('email', inbound);
    return { received: true, event_id: id, status: acceptance.duplicate ? 'duplicate' : 'accepted' };
  }

  /** Worker side, inside the inbox's transaction (the archive row is locked RECEIVED); reads the archive. */
  private async apply(tx: Tx, stored: StoredEvent): Promise<HandlerOutcome> {
    const envelope = emailEnvelope.safeParse(stored.payload);
    if (!envelope.success) throw invalidPayload(envelope.error);
    const at = stored.occurredAt ?? new Date();
    switch (envelope.data.type) {
      case 'email.bounced':
        return this.bounced(tx, stored.eventId, parse(bouncedData, envelope.data.data), at);
      case 'email.complained':
        return this.complained(tx, stored.eventId, parse(emailEventData, envelope.data.data), at);
      case 'email.delivered':
        return this.delivery(tx, parse(emailEventData, envelope.data.data), 'delivered', at);
      case 'email.delivery_delayed':
        return this.delivery(tx, parse(emailEventData, envelope.data.data), 'delivery_delayed', at);
      default:
        return { status: 'skipped', reason: `unhandled event type ${envelope.data.type}` };
    }
  }

  private async bounced(
    tx: Tx,
    eventId: string,
    data: z.infer<typeof bouncedData>,
    at: Date,
  ): Promise<HandlerOutcome> {
    const permanent = isPermanentBounce(data.bounce);
    await this.messages.recordDelivery(tx, data.email_id, permanent ? 'bounced' : 'soft_bounced', at);
    this.metrics.emailDeliveryEvents.inc({ event: permanent ? 'bounced_permanent' : 'bounced_transient' });
    if (!permanent) return { status: 'processed' };
    const rows = await this.messages.findByProviderId(tx, data.email_id);
    await this.suppress(tx, data.to, 'bounce', eventId, data.email_id, rows);
    return { status: 'processed' };
  }

  private async complained(
    tx: Tx,
    eventId: string,
    data: z.infer<typeof emailEventData>,
    at: Date,
  ): Promise<HandlerOutcome> {
    const rows = await this.messages.findByProviderId(tx, data.email_id);
    await this.messages.recordDelivery(tx, data.email_id, 'complained', at);
    // One complaint per message: the provider may report it again under a new webhook message id.
    let first = rows.length === 0;
    for (const row of rows) if (await this.messages.markComplained(tx, row.id, at)) first = true;
    if (!first) return { status: 'skipped', reason: 'complaint already recorded for this message' };
    this.metrics.emailDeliveryEvents.inc({ event: 'complained' });

    await this.suppress(tx, data.to, 'complaint', eventId, data.email_id, rows);
    const userIds = new Set(rows.flatMap((row) => (row.userId ? [row.userId] : [])));
    if (userIds.size === 0) {
      for (const address of data.to)
        for (const user of await this.consent.usersWithAddress(tx, address)) userIds.add(user.id);
    }
    for (const userId of userIds) {
      // Newer wins, as everywhere in the handlers: a complaint applied late (an automatic re-apply, days
      // after it happened) does not withdraw a consent the user gave after it.
      const withdrawn = await this.consent.withdrawMarketingConsent(tx, userId, COMPLAINT_SOURCE, at, {
        onlyIfGivenBefore: true,
      });
      const current = withdrawn ? null : await this.consent.consentOf(tx, userId);
      const kept = current?.marketingConsentGiven === true;
      await this.audit.record(tx, {
        actor: webhookActor('email'),
        action: 'email.complaint',
        userId: withdrawn?.identityUserId ?? current?.identityUserId ?? null,
        resourceType: 'email',
        resourceId: rows.find((row) => row.userId === userId)?.id ?? data.email_id,
        details: {
          event_id: eventId,
          source: COMPLAINT_SOURCE,
          consent_given: kept,
          ...(withdrawn
            ? { consent_at: at.toISOString() }
            : kept
              ? {
                  consent_at: current?.marketingConsentAt?.toISOString() ?? null,
                  reason: 'consent given after the complaint',
                }
              : { reason: 'consent already withdrawn' }),
        },
      });
    }
    return { status: 'processed' };
  }

  private async delivery(
    tx: Tx,
    data: z.infer<typeof emailEventData>,
    status: DeliveryStatus,
    at: Date,
  ): Promise<HandlerOutcome> {
    const changed = await this.messages.recordDelivery(tx, data.email_id, status, at);
    this.metrics.emailDeliveryEvents.inc({ event: status });
    if (changed === 0) {
      const known = (await this.messages.findByProviderId(tx, data.email_id)).length > 0;
      return {
        status: 'skipped',
        reason: known ? 'a later delivery status is recorded already' : 'unknown message',
      };
    }
    return { status: 'processed' };
  }

  /**
   * Suppresses each address (a recipient that is not one, isSuppressibleAddress, is logged and skipped),
   * audited `email.suppressed` under the entry's id: an audit entry never holds an
   * address (audit retention is indefinite and the hard delete cannot find an address in it). The entry is
   * linked to the address's user when there is exactly one, so the export shows it and the hard delete
   * nulls the link like on every other entry of the user.
   */
  private async suppress(
    tx: Tx,
    addresses: string[],
    reason: SuppressionReason,
    eventId: string,
    providerMessageId: string,
    messages: EmailMessage[],
  ): Promise<void> {
    for (const address of new Set(addresses.map(normalizeAddress))) {
      if (!isSuppressibleAddress(address)) {
        this.logger.warn(
          { reason, event_id: eventId, message: providerMessageId },
          'not an address: not suppressed',
        );
        continue;
      }
      const suppressionId = await this.suppressions.add(tx, address, reason, eventId);
      if (!suppressionId) continue;
      this.metrics.emailSuppressions.inc({ reason });
      this.logger.log({ reason, event_id: eventId, message: providerMessageId }, 'address suppressed');
      await this.audit.record(tx, {
        actor: webhookActor('email'),
        action: 'email.suppressed',
        userId: await this.ownerOf(tx, address, messages),
        resourceType: 'email_suppression',
        resourceId: suppressionId,
        details: { reason, event_id: eventId, provider: 'email' },
      });
    }
  }

  /**
   * The identity id of the user a suppressed address belongs to: the user of the reported message sent to
   * it, else the only user with that address; null when there is none or more than one.
   */
  private async ownerOf(tx: Tx, address: string, messages: EmailMessage[]): Promise<string | null> {
    const users = new Set(
      messages.flatMap((row) =>
        row.userId && normalizeAddress(row.toAddress) === address ? [row.userId] : [],
      ),
    );
    if (users.size > 1) return null;
    const [userId] = users;
    return userId ? this.identityOf(tx, userId) : this.consent.soleIdentityWithAddress(tx, address);
  }

  private identityOf(tx: Tx, userId: string): Promise<string | null> {
    return this.consent.identityUserIdOf(tx, userId);
  }
}

function invalidPayload(error: z.ZodError): InvalidWebhookPayloadError {
  return InvalidWebhookPayloadError.fromZod('The e-mail event does not match its schema.', error);
}

function parse<S extends z.ZodType>(schema: S, data: unknown): z.infer<S> {
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw invalidPayload(parsed.error);
  return parsed.data;
}

/** Inside timestamptz's range and a plausible event time (year 2000 to 9999). */
const storableDate = (date: Date): boolean => {
  const year = date.getUTCFullYear();
  return !Number.isNaN(date.getTime()) && year >= 2000 && year <= 9999;
};
