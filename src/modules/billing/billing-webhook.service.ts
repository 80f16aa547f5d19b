import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { AppError, DependencyError } from '../../common/errors/app-error.js';
import { isDependencyFailure } from '../../common/errors/dependency-failure.js';
import type { Tx } from '../../infra/prisma/prisma.service.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { unstorablePayload } from '../webhooks/storable-payload.js';
import { type HandlerOutcome, WebhookInboxService } from '../webhooks/webhook-inbox.service.js';
import {
  InvalidSignatureError,
  InvalidWebhookPayloadError,
  parsePayload,
  WebhookProcessingError,
} from './billing.errors.js';
import { type BillingEvent, envelopeSchema, occurredAtSchema } from './billing-events.schema.js';
import { verifyPaddleSignature } from './paddle-signature.js';
import { PaymentsService } from './payments.service.js';
import { SUBSCRIPTION_EVENTS } from './subscription-snapshot.js';
import { SubscriptionStateService } from './subscription-state.service.js';

export interface WebhookReceipt {
  received: true;
  status: 'processed' | 'skipped' | 'duplicate';
}

const SUBSCRIPTION_EVENT_TYPES = new Set<string>(SUBSCRIPTION_EVENTS);

/**
 * Inbound billing webhooks: signature first (nothing is stored for a bad one), then the shared inbox
 * claims the event id, archives the payload and runs the handler in one transaction. Jobs the handler
 * wrote to the outbox are dispatched after commit.
 */
@Injectable()
export class BillingWebhookService {
  private readonly logger = new Logger(BillingWebhookService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly inbox: WebhookInboxService,
    private readonly outbox: OutboxService,
    private readonly subscriptions: SubscriptionStateService,
    private readonly payments: PaymentsService,
  ) {}

  async receive(rawBody: Buffer | undefined, signature: string | undefined): Promise<WebhookReceipt> {
    const secret = this.config.billing.webhookSecret;
    if (!secret) throw new DependencyError('Billing webhooks are not configured.', 'billing_not_configured');
    const body = rawBody ?? Buffer.alloc(0);
    let check = verifyPaddleSignature(signature, body, secret);
    const previous = this.config.billing.previousWebhookSecret;
    // During a secret rotation deliveries signed with the previous secret are still genuine.
    if (!check.ok && previous) check = verifyPaddleSignature(signature, body, previous);
    if (!check.ok) {
      this.logger.warn({ reason: check.reason }, 'billing webhook refused: bad signature');
      throw new InvalidSignatureError();
    }

    let envelope;
    try {
      envelope = this.parseEnvelope(body);
    } catch (err) {
      // Authentic but impossible to key or store, so nothing is archived: the log is the only trace,
      // and the provider keeps retrying it (non-2xx) until someone looks.
      this.logger.warn(
        { reason: (err as Error).message, bytes: body.length },
        'signed billing webhook refused: envelope cannot be archived',
      );
      throw err;
    }
    const occurredAt = occurredAtSchema.safeParse(envelope.occurred_at);
    let result;
    try {
      result = await this.inbox.process(
        'billing',
        {
          eventId: envelope.event_id,
          eventType: envelope.event_type,
          occurredAt: occurredAt.success ? occurredAt.data : null,
          payload: envelope as Prisma.InputJsonValue,
        },
        (tx, outboxIds) => {
          // Inside the transaction: a payload that fails validation rolls the claim back and is
          // archived FAILED by the inbox, so a corrected deployment can still process the provider's retry.
          const occurred = parsePayload(occurredAtSchema, envelope.occurred_at, 'occurred_at');
          const event = {
            eventId: envelope.event_id,
            eventType: envelope.event_type,
            occurredAt: occurred,
            data: envelope.data,
          };
          return this.dispatch(tx, event, outboxIds);
        },
      );
    } catch (err) {
      throw this.asHttpError(err);
    }
    await this.outbox.dispatch(result.outboxIds);
    return { received: true, status: result.duplicate ? 'duplicate' : result.outcome!.status };
  }

  private dispatch(tx: Tx, event: BillingEvent, outboxIds: string[]): Promise<HandlerOutcome> {
    if (SUBSCRIPTION_EVENT_TYPES.has(event.eventType)) return this.subscriptions.handle(tx, event, outboxIds);
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
  private parseEnvelope(body: Buffer) {
    let json: unknown;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      throw new InvalidWebhookPayloadError('The webhook body is not valid JSON.');
    }
    const unstorable = unstorablePayload(json);
    if (unstorable) throw new InvalidWebhookPayloadError(`The webhook body cannot be stored: ${unstorable}.`);
    return parsePayload(envelopeSchema, json, 'The webhook envelope');
  }

  /** Handler failures must make the provider retry: 503 for an unavailable store, else 500; never a 4xx. */
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
    this.logger.error({ err: (err as Error)?.message }, 'billing webhook handler failed');
    return new WebhookProcessingError(err);
  }
}
