import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config.js';
import { AppError, DependencyError } from '../../../common/errors/app-error.js';
import { isDependencyFailure } from '../../../common/errors/dependency-failure.js';
import { clipText } from '../../../common/validation/unicode.js';
import type { Tx } from '../../../infra/prisma/prisma.service.js';
import type { Prisma } from '../../../generated/prisma/client.js';
import { systemActor, webhookActor } from '../../audit/audit.service.js';
import { unstorableBody, unstorablePayload } from '../../webhooks/storable-payload.js';
import {
  type Acceptance,
  dataIdsOf,
  type HandlerOutcome,
  type StoredEvent,
  WebhookInboxService,
} from '../../webhooks/webhook-inbox.service.js';
import { WebhookRefusalsService } from '../../webhooks/webhook-refusals.service.js';
import {
  InvalidSignatureError,
  InvalidWebhookPayloadError,
  parsePayload,
  WebhookProcessingError,
} from '../billing.errors.js';
import {
  adjustmentSchema,
  type BillingEvent,
  envelopeSchema,
  occurredAtSchema,
  subscriptionSchema,
  transactionSchema,
} from './billing-events.schema.js';
import { verifyPaddleSignature } from './paddle-signature.js';
import { PaymentsService } from '../payments/payments.service.js';
import { SUBSCRIPTION_EVENTS } from '../subscriptions/subscription-snapshot.js';
import { SubscriptionStateService } from '../subscriptions/subscription-state.service.js';

export type BillingEnvelope = ReturnType<typeof envelopeSchema.parse>;

export interface WebhookReceipt {
  received: true;
  /** accepted: stored, applied by the worker shortly; duplicate: this event id was accepted before. */
  status: 'accepted' | 'duplicate';
}

const SUBSCRIPTION_EVENT_TYPES = new Set<string>(SUBSCRIPTION_EVENTS);

/**
 * Inbound billing webhooks: signature first (nothing is stored for a bad one), then the payload checks, then
 * the shared inbox claims the event id and archives the payload in one statement and the worker applies it
 * (apply(), registered with the inbox). The backfill feeds the provider's event log through ingest().
 */
@Injectable()
export class BillingWebhookService implements OnModuleInit {
  private readonly logger = new Logger(BillingWebhookService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly inbox: WebhookInboxService,
    private readonly subscriptions: SubscriptionStateService,
    private readonly payments: PaymentsService,
    private readonly refusals: WebhookRefusalsService,
  ) {}

  onModuleInit(): void {
    // An event that failed processing through all its attempts (an unknown price until it is configured, a
    // database fault) is re-applied automatically for a few days: the handlers converge in any order.
    this.inbox.register(
      'billing',
      (tx, stored) => this.apply(tx, stored),
      (tx, batch) => this.prepare(tx, batch),
    );
  }

  async receive(rawBody: Buffer | undefined, signature: string | undefined): Promise<WebhookReceipt> {
    const secret = this.config.billing.webhookSecret;
    if (!secret) throw new DependencyError('Billing webhooks are not configured.', 'billing_not_configured');
    const body = rawBody ?? Buffer.alloc(0);
    let check = verifyPaddleSignature(signature, body, secret);
    const previous = this.config.billing.previousWebhookSecret;
    // During a secret rotation deliveries signed with the previous secret are still genuine.
    if (!check.ok && previous) check = verifyPaddleSignature(signature, body, previous);
    if (!check.ok) {
      this.refusals.refused('billing', { reason: 'invalid_signature', detail: check.reason });
      throw new InvalidSignatureError();
    }

    const parsed = this.parseEnvelope(body);
    if (!parsed.ok) {
      // Authentic but impossible to key or store, so nothing is archived: the audit entry (with the body's
      // SHA-256) and the log are the trace, and the provider keeps retrying it (non-2xx) until someone looks.
      await this.refusals.unarchivable('billing', {
        reason: parsed.reason,
        body,
        eventId: parsed.eventId,
        detail: parsed.error.message,
      });
      throw parsed.error;
    }
    const acceptance = await this.ingest(parsed.envelope);
    return { received: true, status: acceptance.duplicate ? 'duplicate' : 'accepted' };
  }

  /**
   * The intake shared by the receiver and the backfill: what the worker will read is checked now (a payload
   * that breaks the contract is refused with InvalidWebhookPayloadError, archived FAILED and audited, and
   * the provider's retry is accepted once the schema is fixed), then one statement stores it.
   */
  async ingest(envelope: BillingEnvelope, source: 'delivery' | 'backfill' = 'delivery'): Promise<Acceptance> {
    const occurredAt = occurredAtSchema.safeParse(envelope.occurred_at);
    const inbound = {
      eventId: envelope.event_id,
      eventType: envelope.event_type,
      occurredAt: occurredAt.success ? occurredAt.data : null,
      payload: envelope as Prisma.InputJsonValue,
      source,
    };
    try {
      validate(envelope.event_type, envelope.occurred_at, envelope.data);
    } catch (err) {
      if (err instanceof InvalidWebhookPayloadError) await this.inbox.refuse('billing', inbound, err);
      throw err;
    }
    try {
      return await this.inbox.accept('billing', inbound);
    } catch (err) {
      throw this.asHttpError(err);
    }
  }

  /** An event of the provider's event log, checked like a delivered body (null when it cannot be stored). */
  envelopeOf(event: unknown): BillingEnvelope | null {
    if (unstorablePayload(event)) return null;
    const parsed = envelopeSchema.safeParse(event);
    return parsed.success ? parsed.data : null;
  }

  /** Worker side, before a batch: its subscription events' subscriptions are locked and read at once. */
  private async prepare(tx: Tx, batch: readonly StoredEvent[]): Promise<void> {
    const ids = dataIdsOf(batch, SUBSCRIPTION_EVENT_TYPES);
    if (ids.length > 0) await this.subscriptions.prepare(tx, ids);
  }

  /** Worker side: the stored envelope, applied by the handler of its event type. */
  private apply(tx: Tx, stored: StoredEvent): Promise<HandlerOutcome> {
    const payload = (stored.payload ?? {}) as { occurred_at?: unknown; data?: unknown };
    const occurredAt = parsePayload(occurredAtSchema, payload.occurred_at, 'occurred_at');
    const event = {
      eventId: stored.eventId,
      eventType: stored.eventType,
      occurredAt,
      data: payload.data,
      actor: stored.source === 'backfill' ? systemActor('backfill') : webhookActor('billing'),
    };
    return this.dispatch(tx, event);
  }

  private dispatch(tx: Tx, event: BillingEvent): Promise<HandlerOutcome> {
    if (SUBSCRIPTION_EVENT_TYPES.has(event.eventType)) return this.subscriptions.handle(tx, event);
    // Payments write subscriptions' users: what prepare() read is not trusted after one.
    this.subscriptions.forgetPrepared(tx);
    switch (event.eventType) {
      case 'transaction.completed':
        return this.payments.transactionCompleted(tx, event);
      case 'adjustment.created':
      case 'adjustment.updated':
        return this.payments.adjustment(tx, event);
      default:
        // Other provider events (customer.*, transaction.paid, ...) are archived and acknowledged.
        return Promise.resolve({ status: 'skipped', reason: 'unhandled_event_type' });
    }
  }

  /** Without an event id and type, or with content jsonb refuses, the body cannot be archived: 400, nothing stored. */
  private parseEnvelope(
    body: Buffer,
  ):
    | { ok: true; envelope: BillingEnvelope }
    | { ok: false; reason: string; eventId: string | null; error: InvalidWebhookPayloadError } {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      const error = new InvalidWebhookPayloadError('The webhook body is not valid JSON.');
      return { ok: false, reason: 'not_json', eventId: null, error };
    }
    const named = (json as { event_id?: unknown } | null)?.event_id;
    // Clipped for the refusal's trace; never through a surrogate pair (half an emoji would be escaped as `\ud83d`).
    const eventId = typeof named === 'string' && named.length > 0 ? clipText(named, 200) : null;
    const unstorable = unstorableBody(body, json);
    if (unstorable) {
      const error = new InvalidWebhookPayloadError(`The webhook body cannot be stored: ${unstorable}.`);
      return { ok: false, reason: 'unstorable', eventId, error };
    }
    try {
      return { ok: true, envelope: parsePayload(envelopeSchema, json, 'The webhook envelope') };
    } catch (err) {
      if (!(err instanceof InvalidWebhookPayloadError)) throw err;
      return { ok: false, reason: eventId ? 'invalid_envelope' : 'no_event_id', eventId, error: err };
    }
  }

  /** A failed intake statement must make the provider retry: 503 for an unavailable store, else 500; never a 4xx. */
  private asHttpError(err: unknown): AppError {
    if (err instanceof InvalidWebhookPayloadError) return err;
    if (err instanceof DependencyError) return err;
    if (isDependencyFailure(err)) {
      return new DependencyError(
        'A backing service is unavailable; retry later.',
        'dependency_unavailable',
        err,
      );
    }
    this.logger.error({ err: (err as Error)?.message }, 'billing webhook could not be stored');
    return new WebhookProcessingError(err);
  }
}

/** The checks the handlers make, run at intake so a payload that breaks the contract is answered 400. */
function validate(eventType: string, occurredAt: unknown, data: unknown): void {
  parsePayload(occurredAtSchema, occurredAt, 'occurred_at');
  if (SUBSCRIPTION_EVENT_TYPES.has(eventType)) parsePayload(subscriptionSchema, data, `${eventType} data`);
  else if (eventType === 'transaction.completed') parsePayload(transactionSchema, data, `${eventType} data`);
  else if (eventType === 'adjustment.created' || eventType === 'adjustment.updated') {
    parsePayload(adjustmentSchema, data, `${eventType} data`);
  }
}
