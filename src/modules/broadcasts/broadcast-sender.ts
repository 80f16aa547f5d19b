import { Injectable } from '@nestjs/common';
import { EmailService, type SkipReason } from '../email/email.service.js';
import type { EmailKind, OutboundEmail } from '../email/email.types.js';
import { type DeliveryOutcome, EmailBatchDelivery } from '../email/batch-delivery.js';
import { newBatchKey, recipientKey } from './broadcast-keys.js';
import { BroadcastRecorder, type PageRow } from './broadcast-recorder.js';
import { type AudienceMember, BroadcastsRepository, type PendingGroup } from './broadcasts.repository.js';

export interface RunContext {
  id: string;
  templateKey: string;
  kind: EmailKind;
  bypassConsent: boolean;
}

type Outcome = DeliveryOutcome | { status: 'skipped'; reason: SkipReason };

/** The provider could not be used now (email/batch-delivery.ts); the run resumes later. */
export { DeliveryInterrupted as DispatchInterrupted } from '../email/batch-delivery.js';

/** A reserved (pending) recipient with its rendered message. */
interface Target {
  recipientId: string;
  user: AudienceMember;
  message: OutboundEmail;
}

/**
 * Sends one page (<= 100) of a run's audience. The gate is email/'s send policy (`EmailService.gate`);
 * then one statement records the skipped recipients and reserves the others as `pending` rows under a
 * new batch key (BroadcastRecorder); only then is the provider called (email/'s EmailBatchDelivery: one
 * batch request), and a second statement settles the pending rows (recipient rows and counters here,
 * the e-mail log rows and audit entries by email/). A run interrupted between the two finds the pending
 * rows and resends that same batch, same members, same key, so the provider answers from its idempotency
 * record instead of delivering again.
 *
 * What counts as delivered, refused or interrupted (the outage rule) is EmailBatchDelivery's; this class
 * only keeps the run state it implies: a batch refused outright loses its key and goes out one by one
 * (`splitBatch`), and an interruption leaves what has no outcome pending for the next attempt.
 */
@Injectable()
export class BroadcastSender {
  constructor(
    private readonly email: EmailService,
    private readonly delivery: EmailBatchDelivery,
    private readonly repository: BroadcastsRepository,
    private readonly recorder: BroadcastRecorder,
  ) {}

  /** A new page of the audience. */
  async process(run: RunContext, users: AudienceMember[], signal?: AbortSignal): Promise<void> {
    const skipped: PageRow[] = [];
    const sendable: AudienceMember[] = [];
    // The one send policy of email/ (consent, suppression list, deleted and disposable addresses).
    const gate = await this.email.gate(users, {
      kind: run.kind,
      broadcast: true,
      bypassConsent: run.bypassConsent,
    });
    for (const user of users) {
      const reason = gate.get(user.id) ?? null;
      if (reason) skipped.push(this.row(run, user, { status: 'skipped', reason }));
      else sendable.push(user);
    }
    const key = sendable.length > 0 ? newBatchKey(run.id) : null;
    const reserved = await this.recorder.reservePage(
      run.id,
      skipped,
      sendable.map((user) => user.id),
      key,
    );
    // A concurrent delivery of the same run may have reserved some of them: each is reserved once, and
    // the batch is what this statement reserved under this key (what a resume would load).
    const ids = new Map(reserved.map((r) => [r.userId, r.recipientId]));
    const members = sendable
      .filter((user) => ids.has(user.id))
      .map((user) => ({ recipientId: ids.get(user.id)!, user }));
    if (members.length > 0) await this.deliver(run, members, key, signal);
  }

  /**
   * Pending recipients left by an interrupted attempt: resent unchanged (same members, same key). A
   * member whose account has been erased since cannot be rendered; it is recorded skipped and the rest
   * go out under the same key (if the provider had the batch, it answers 409 for the changed body: the
   * batch went out, see `duplicate`).
   */
  async resume(run: RunContext, group: PendingGroup, signal?: AbortSignal): Promise<void> {
    const erased = group.members.filter((member) => member.user === null);
    if (erased.length > 0) {
      await this.recorder.settle(
        run.id,
        erased.map(({ recipientId }) => ({
          recipientId,
          userId: null,
          status: 'skipped',
          error: 'user_not_found',
          providerMessageId: null,
          email: null,
        })),
      );
    }
    const members = group.members.flatMap(({ recipientId, user }) => (user ? [{ recipientId, user }] : []));
    if (members.length > 0) await this.deliver(run, members, group.batchKey, signal);
  }

  /**
   * Sends reserved recipients (as one batch under `key`, or one by one when `key` is null) and settles
   * what the provider answered. Throws DispatchInterrupted when the rest must wait for a later attempt.
   */
  private async deliver(
    run: RunContext,
    members: { recipientId: string; user: AudienceMember }[],
    key: string | null,
    signal?: AbortSignal,
  ): Promise<void> {
    const targets: Target[] = members.map(({ recipientId, user }) => ({
      recipientId,
      user,
      message: this.email.compose(user, {
        templateKey: run.templateKey,
        idempotencyKey: recipientKey(run.id, user.id),
        tags: { broadcast: run.id },
        unsubscribe: !run.bypassConsent,
      }),
    }));
    const outcomes = new Map<string, DeliveryOutcome>();
    const messages = targets.map(({ recipientId, message }) => ({ id: recipientId, message }));
    let alone = key === null;
    if (key !== null && !(await this.delivery.sendBatch(messages, key, outcomes, signal))) {
      await this.repository.splitBatch(run.id, key);
      alone = true;
    }

    let interruption: unknown = null;
    if (alone)
      await this.delivery
        .sendOneByOne(messages, outcomes, signal)
        .catch((err: unknown) => (interruption = err));
    await this.settle(run, targets, outcomes);
    if (interruption) throw interruption;
  }

  /** Settles the targets that have an outcome; the others stay pending. */
  private async settle(run: RunContext, targets: Target[], outcomes: Map<string, Outcome>): Promise<void> {
    const rows: PageRow[] = [];
    for (const { recipientId, user, message } of targets) {
      const outcome = outcomes.get(recipientId);
      if (outcome) rows.push({ ...this.row(run, user, outcome, message), recipientId });
    }
    await this.recorder.settle(run.id, rows);
  }

  /** A member's outcome: its recipient row and the e-mail record email/ writes for it. */
  private row(run: RunContext, user: AudienceMember, outcome: Outcome, message?: OutboundEmail): PageRow {
    const error =
      outcome.status === 'skipped' ? outcome.reason : outcome.status === 'failed' ? outcome.error : null;
    const providerMessageId = outcome.status === 'sent' ? outcome.providerId : null;
    return {
      userId: user.id,
      status: outcome.status,
      error,
      providerMessageId,
      email: {
        userId: user.id,
        identityUserId: user.identityUserId,
        toAddress: user.email,
        templateKey: run.templateKey,
        kind: run.kind,
        subject: message?.subject ?? '',
        status: outcome.status,
        reason: error,
        idempotencyKey: recipientKey(run.id, user.id),
        providerMessageId,
        broadcastRunId: run.id,
        ...(message ? this.email.storedBody(message) : { html: null, text: null }),
      },
    };
  }
}
