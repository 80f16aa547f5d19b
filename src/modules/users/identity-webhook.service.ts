import type { IncomingHttpHeaders } from 'node:http';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { z } from 'zod';
import { AppConfig } from '../../config/app-config.js';
import type { Tx } from '../../infra/prisma/prisma.service.js';
import { OutboxService } from '../../infra/queue/outbox.service.js';
import { JOBS } from '../../infra/queue/queues.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { AuditService, webhookActor } from '../audit/audit.service.js';
import { StandardWebhooksVerifier } from '../webhooks/standard-webhooks.js';
import { InvalidWebhookPayloadError } from '../webhooks/webhook-payload.error.js';
import {
  dataIdsOf,
  type HandlerOutcome,
  type StoredEvent,
  WebhookInboxService,
} from '../webhooks/webhook-inbox.service.js';
import { WebhookRefusalsService } from '../webhooks/webhook-refusals.service.js';
import { AccountDeletionService } from './account-deletion.service.js';
import {
  archivableIdentityPayload,
  identityDeletedData,
  identityEnvelope,
  identityUserData,
  identityVersion,
  primaryAddress,
} from './identity-events.js';
import { UsersRepository } from './users.repository.js';
import { UsersService } from './users.service.js';

export interface WebhookReceipt {
  received: true;
  event_id: string;
  /** accepted (stored; the worker applies it shortly) or duplicate (redelivery, nothing done). */
  status: 'accepted' | 'duplicate';
}

/**
 * The event types whose handlers lock the identity (created, deleted, and updated when no row exists) or
 * its user row (updated): a batch takes their identity locks first, in one order (see prepare).
 */
const LOCKING_EVENT_TYPES = new Set(['user.created', 'user.updated', 'user.deleted']);

/**
 * POST /webhooks/identity: Standard Webhooks verification over the exact raw body before anything else
 * (invalid -> 401, nothing stored), then exactly-once handling through the shared webhook inbox, which
 * claims the message id, archives the payload and runs the effect in one transaction.
 */
@Injectable()
export class IdentityWebhookService implements OnModuleInit {
  /** Standard Webhooks: the current secret first, then the previous one during a rotation. */
  private readonly verifier: StandardWebhooksVerifier;

  constructor(
    config: AppConfig,
    private readonly inbox: WebhookInboxService,
    private readonly usersService: UsersService,
    private readonly users: UsersRepository,
    private readonly deletion: AccountDeletionService,
    private readonly audit: AuditService,
    private readonly outbox: OutboxService,
    refusals: WebhookRefusalsService,
  ) {
    this.verifier = new StandardWebhooksVerifier(
      'identity',
      'IDENTITY_WEBHOOK_SECRET',
      [config.identity.webhookSecret, config.identity.previousWebhookSecret],
      refusals,
    );
  }

  onModuleInit(): void {
    this.inbox.register(
      'identity',
      (tx, stored) => this.apply(tx, stored),
      (tx, batch) => this.prepare(tx, batch),
    );
  }

  /**
   * Worker side, before a batch: the identities of its user events are locked at once, in one order
   * (UsersRepository.lockIdentities). Two batches about the same identities then wait for each other
   * instead of each locking one (the identity lock, or the user row an update locks) and waiting for the
   * other's.
   */
  private async prepare(tx: Tx, batch: readonly StoredEvent[]): Promise<void> {
    await this.users.lockIdentities(tx, dataIdsOf(batch, LOCKING_EVENT_TYPES));
  }

  async receive(rawBody: Buffer | undefined, headers: IncomingHttpHeaders): Promise<WebhookReceipt> {
    const { id, timestamp, payload } = await this.verifier.verify(rawBody, headers);
    const envelope = identityEnvelope.safeParse(payload);
    const eventType = envelope.success ? envelope.data.type : 'invalid';
    const occurredAt =
      envelope.success && envelope.data.timestamp ? new Date(envelope.data.timestamp) : timestamp;
    // The archive keeps an allowlist, never the raw body: no name or phone is stored (issue 13 item 10).
    const archived = archivableIdentityPayload(payload) as Prisma.InputJsonObject;
    const inbound = { eventId: id, eventType, occurredAt, payload: archived };

    // A verified but malformed event is the provider's bug: archived FAILED (webhook.failed) and answered
    // 400 now, never accepted into retries that cannot succeed.
    const invalid = envelope.success ? invalidData(envelope.data.type, envelope.data.data) : null;
    const refusal = envelope.success ? invalid : invalidPayload(envelope.error);
    if (refusal) {
      await this.inbox.refuse('identity', inbound, refusal);
      throw refusal;
    }
    const acceptance = await this.inbox.accept('identity', inbound);
    return { received: true, event_id: id, status: acceptance.duplicate ? 'duplicate' : 'accepted' };
  }

  /** Worker side: the archived allowlist holds every field the handlers read. */
  private apply(tx: Tx, stored: StoredEvent): Promise<HandlerOutcome> {
    const envelope = identityEnvelope.safeParse(stored.payload);
    if (!envelope.success) throw invalidPayload(envelope.error);
    return this.handle(tx, envelope.data.type, envelope.data.data, stored.occurredAt ?? new Date(0));
  }

  private async handle(
    tx: Tx,
    type: string,
    data: Record<string, unknown>,
    occurredAt: Date,
  ): Promise<HandlerOutcome> {
    switch (type) {
      case 'user.created':
        return this.created(tx, parse(identityUserData, data), occurredAt);
      case 'user.updated':
        return this.updated(tx, parse(identityUserData, data), occurredAt);
      case 'user.deleted':
        return this.deleted(tx, parse(identityDeletedData, data));
      default:
        return { status: 'skipped', reason: `unhandled event type ${type}` };
    }
  }

  /**
   * Creates the user unless the row exists. Deliveries are unordered and retried: a user.deleted may have
   * arrived first (for a user we never saw, it had nothing to delete). An event that is not newer than an
   * archived deletion of the identity (same clock as the update rule: `updated_at`, else the event time)
   * creates nothing, so the late delivery cannot bring back, and welcome, a person the provider deleted.
   * Under the identity's lock (UsersRepository.lockIdentity), taken before the guard's read, as the
   * just-in-time creation and user.deleted take it.
   */
  private async created(
    tx: Tx,
    data: z.infer<typeof identityUserData>,
    occurredAt: Date,
  ): Promise<HandlerOutcome> {
    const address = primaryAddress(data);
    if (!address) return { status: 'skipped', reason: 'the user has no e-mail address' };
    const version = identityVersion(data, occurredAt);
    await this.users.lockIdentity(tx, data.id);
    if (await this.usersService.deletedByProviderSince(tx, data.id, version)) {
      return {
        status: 'skipped',
        reason: 'stale event: not newer than the identity provider deleting the user',
      };
    }
    const ensured = await this.usersService.ensureUser(tx, {
      identityUserId: data.id,
      email: address.email,
      emailVerified: address.verified,
      via: 'identity_webhook',
      identityUpdatedAt: version,
    });
    // Created just in time by an earlier request (that path already audited and ran the hooks), or by a
    // user.updated that overtook this event: either way the row is at least as new as the creation.
    return ensured.created ? { status: 'processed' } : { status: 'skipped', reason: 'user already existed' };
  }

  /**
   * Applies the provider's address and its verification, newer wins: deliveries are unordered and
   * retried, so an event older than the last one applied (by the user's `updated_at`, else the event
   * time) changes nothing; an old address delivered late never comes back.
   */
  private async updated(
    tx: Tx,
    data: z.infer<typeof identityUserData>,
    occurredAt: Date,
  ): Promise<HandlerOutcome> {
    const address = primaryAddress(data);
    if (!address) return { status: 'skipped', reason: 'the user has no e-mail address' };
    const user = await this.users.lockByIdentityId(tx, data.id);
    if (!user) {
      // Deliveries are unordered: an update that overtakes user.created creates the row with the newer address.
      return this.created(tx, data, occurredAt);
    }
    const version = identityVersion(data, occurredAt);
    if (user.identityUpdatedAt && version.getTime() < user.identityUpdatedAt.getTime()) {
      return { status: 'skipped', reason: 'stale event: older than the last change applied' };
    }
    const emailChanged = user.email !== address.email;
    if (!emailChanged && user.emailVerified === address.verified) {
      if (!user.identityUpdatedAt || version.getTime() > user.identityUpdatedAt.getTime())
        await this.users.update(tx, user.id, { identityUpdatedAt: version });
      return { status: 'skipped', reason: 'no change' };
    }
    await this.users.update(tx, user.id, {
      email: address.email,
      emailVerified: address.verified,
      identityUpdatedAt: version,
    });
    const fieldsChanged = [...(emailChanged ? ['email'] : []), 'email_verified'];
    await this.audit.record(tx, {
      actor: webhookActor('identity'),
      action: 'user.updated',
      userId: user.identityUserId,
      resourceType: 'user',
      resourceId: user.id,
      details: {
        fields_changed: emailChanged && user.emailVerified === address.verified ? ['email'] : fieldsChanged,
        via: 'identity_webhook',
      },
    });
    // Reactions to the new address (e.g. the disposable-domain flag) run in the worker after commit.
    if (emailChanged) await this.outbox.add(tx, JOBS.emailChanged, { userId: user.id });
    return { status: 'processed' };
  }

  /**
   * Soft-deletes the user (grace period, hooks). Under the identity's lock, taken before the read: a
   * just-in-time creation that passed the deletion guard before this event was accepted inserts the row in
   * a transaction holding that lock, so this waits for its commit and finds the row (else it would skip
   * "unknown user" and the account would outlive the deletion).
   */
  private async deleted(tx: Tx, data: z.infer<typeof identityDeletedData>): Promise<HandlerOutcome> {
    await this.users.lockIdentity(tx, data.id);
    const user = await this.users.findByIdentityId(tx, data.id);
    if (!user) return { status: 'skipped', reason: 'unknown user' };
    const result = await this.deletion.softDelete(tx, user.id, 'identity_webhook');
    if (!result?.changed) return { status: 'skipped', reason: 'already scheduled for deletion' };
    return { status: 'processed' };
  }
}

function invalidPayload(error: z.ZodError): InvalidWebhookPayloadError {
  return InvalidWebhookPayloadError.fromZod('The identity event does not match its schema.', error);
}

/** The data check of the event types that are handled; null when the data is usable. */
function invalidData(type: string, data: unknown): InvalidWebhookPayloadError | null {
  const schema =
    type === 'user.created' || type === 'user.updated'
      ? identityUserData
      : type === 'user.deleted'
        ? identityDeletedData
        : null;
  if (!schema) return null;
  const parsed = schema.safeParse(data);
  return parsed.success ? null : invalidPayload(parsed.error);
}

function parse<S extends z.ZodType>(schema: S, data: unknown): z.infer<S> {
  const parsed = schema.safeParse(data);
  if (!parsed.success) throw invalidPayload(parsed.error);
  return parsed.data;
}
