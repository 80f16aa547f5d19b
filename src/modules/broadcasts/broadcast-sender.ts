import { Injectable } from '@nestjs/common';
import { EmailService, type SkipReason } from '../email/email.service.js';
import type { EmailKind, OutboundEmail } from '../email/email.types.js';
import { type DeliveryOutcome, DeliveryInterrupted, EmailBatchDelivery } from '../email/batch-delivery.js';
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
 * A pending recipient the send policy refuses now (or whose account has been erased): left out of the
 * resent batch, and recorded once the provider has said whether it already had the batch.
 */
interface Withheld {
  recipientId: string;
  user: AudienceMember | null;
  reason: SkipReason;
}

/**
 * Sends one page (<= 100) of a run's audience. The gate is email/'s send policy (`EmailService.gate`);
 * then one statement records the skipped recipients and reserves the others as `pending` rows under a
 * new batch key (BroadcastRecorder); only then is the provider called (email/'s EmailBatchDelivery: one
 * batch request), and a second statement settles the pending rows (recipient rows and counters here,
 * the e-mail log rows and audit entries by email/). A run interrupted between the two finds the pending
 * rows, gates them again and resends the batch under the same key (`resume`), so a provider that took
 * it answers from its idempotency record instead of delivering again.
 *
 * What counts as delivered, refused, failed or interrupted (the outage rule, and the budget of
 * 1 + EMAIL_SEND_RETRIES provider requests per key across attempts) is EmailBatchDelivery's; this class
 * only keeps the run state it implies: a batch refused outright loses its key and goes out one by one
 * (`splitBatch`), a batch whose budget is spent is settled `failed`, and an interruption leaves what has
 * no outcome pending for the next attempt (which resends it with what is left of the key's budget).
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
    const gate = await this.gate(run, users);
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
   * Pending recipients left by an interrupted attempt. The batch may never have reached the provider (a
   * crash after the reservation, the rest of a page after an outage, a request cut off at shutdown), so
   * they pass the same gate as a first send again: a member who has since unsubscribed, been suppressed
   * or deleted (or erased) is withheld, and the others go out under the stored key. A smaller batch
   * under that key cannot deliver twice: a provider that had an earlier batch under it refuses the other
   * body (409 `invalid_idempotent_request`, nothing delivered) and the batch it had went out, to the
   * withheld members too (recorded sent); otherwise the provider delivers just this batch now and the
   * withheld are recorded skipped with their reason. A new key would be unsafe: it would deliver again
   * whatever the provider had taken.
   */
  async resume(run: RunContext, group: PendingGroup, signal?: AbortSignal): Promise<void> {
    const users = group.members.flatMap(({ user }) => (user ? [user] : []));
    const gate = users.length > 0 ? await this.gate(run, users) : new Map<string, SkipReason | null>();
    const members: { recipientId: string; user: AudienceMember }[] = [];
    const withheld: Withheld[] = [];
    for (const { recipientId, user } of group.members) {
      // An erased member cannot be rendered (no account left).
      const reason = user ? (gate.get(user.id) ?? null) : 'user_not_found';
      if (reason) withheld.push({ recipientId, user, reason });
      else members.push({ recipientId, user: user! });
    }
    // Sent one by one, each under its own key, or nobody left to send: no request can tell whether the
    // provider had their messages, and none may go out now.
    if (group.batchKey === null || members.length === 0) {
      await this.recorder.settle(
        run.id,
        withheld.map((member) => this.withheldRow(run, member, false)),
      );
      if (members.length > 0) await this.deliver(run, members, group.batchKey, signal);
      return;
    }
    await this.deliver(run, members, group.batchKey, signal, withheld);
  }

  /** email/'s one send policy (consent, suppression list, deleted and disposable addresses) for a broadcast. */
  private gate(run: RunContext, users: AudienceMember[]): Promise<Map<string, SkipReason | null>> {
    return this.email.gate(users, { kind: run.kind, broadcast: true, bypassConsent: run.bypassConsent });
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
    withheld: Withheld[] = [],
  ): Promise<void> {
    const targets: Target[] = members.map(({ recipientId, user }) => ({
      recipientId,
      user,
      message: this.compose(run, user),
    }));
    const outcomes = new Map<string, DeliveryOutcome>();
    const messages = targets.map(({ recipientId, message }) => ({ id: recipientId, message }));
    let alone = key === null;
    // Withheld members are settled with the batch's answer (interrupted: they stay pending, gated again).
    let sentBefore = false;
    let interruption: unknown = null;
    if (key !== null) {
      const answer = await this.delivery.sendBatch(messages, key, outcomes, signal);
      sentBefore = answer.result === 'sent_before';
      if (answer.result === 'refused') {
        await this.repository.splitBatch(run.id, key);
        alone = true;
      }
      // The provider failed this batch's whole budget just now: it is settled `failed`, and the pages not
      // reserved yet wait for a later attempt (each with its own budget) instead of spending theirs on the
      // same outage, as the one-by-one path stops after OUTAGE_STREAK failures. The provider's error is the
      // cause, so an outage stays an outage: the run stays `running` and is pushed again (relay, sweep).
      if (answer.result === 'gave_up') interruption = new DeliveryInterrupted(answer.cause);
    }

    if (alone)
      await this.delivery
        .sendOneByOne(messages, outcomes, signal)
        .catch((err: unknown) => (interruption = err));
    await this.settle(run, targets, outcomes, withheld, sentBefore);
    if (interruption) throw interruption;
  }

  /** Settles the targets that have an outcome (the others stay pending) and the withheld members. */
  private async settle(
    run: RunContext,
    targets: Target[],
    outcomes: Map<string, Outcome>,
    withheld: Withheld[],
    sentBefore: boolean,
  ): Promise<void> {
    const rows: PageRow[] = withheld.map((member) => this.withheldRow(run, member, sentBefore));
    for (const { recipientId, user, message } of targets) {
      const outcome = outcomes.get(recipientId);
      if (outcome) rows.push({ ...this.row(run, user, outcome, message), recipientId });
    }
    await this.recorder.settle(run.id, rows);
  }

  /**
   * A withheld member's record: `sent` when the provider already had another batch under the key (it went
   * out then, and it held this member: rows only ever leave a pending batch; the exception, a member
   * withheld already by the attempt whose batch the provider took, cannot be told apart), otherwise
   * `skipped` with the gate's reason, as a first send records it. An erased member keeps no e-mail record.
   */
  private withheldRow(run: RunContext, member: Withheld, sentBefore: boolean): PageRow {
    const { recipientId, user, reason } = member;
    const outcome: Outcome = sentBefore
      ? { status: 'sent', providerId: null }
      : { status: 'skipped', reason };
    if (user)
      return {
        ...this.row(run, user, outcome, sentBefore ? this.compose(run, user) : undefined),
        recipientId,
      };
    const error = sentBefore ? null : reason;
    return { recipientId, userId: null, status: outcome.status, error, providerMessageId: null, email: null };
  }

  private compose(run: RunContext, user: AudienceMember): OutboundEmail {
    return this.email.compose(user, {
      templateKey: run.templateKey,
      idempotencyKey: recipientKey(run.id, user.id),
      tags: { broadcast: run.id },
      unsubscribe: !run.bypassConsent,
    });
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
