import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { curateDetails } from '../audit/audit.details.js';
import { EmailService, type SkipReason } from '../email/email.service.js';
import type { EmailKind, OutboundEmail } from '../email/email.types.js';
import { EmailProvider, EmailSendError } from '../email/providers/email-provider.js';
import { batchKey, recipientKey } from './broadcast-keys.js';
import {
  type AudienceMember,
  BroadcastsRepository,
  type PageRow,
  type RecipientCounts,
} from './broadcasts.repository.js';

export interface RunContext {
  id: string;
  templateKey: string;
  kind: EmailKind;
  bypassConsent: boolean;
}

type Outcome =
  | { status: 'sent'; providerId: string | null; message: OutboundEmail }
  | { status: 'failed'; error: string; message: OutboundEmail }
  | { status: 'skipped'; reason: SkipReason };

/** Consecutive per-recipient provider outages after which the provider counts as down for this run. */
const OUTAGE_STREAK = 3;

/**
 * The consent gate of a broadcast. A broadcast is mass mail: it honours marketing consent whatever the
 * template kind, unless `bypass_consent` (transactional templates only: the 409 rule) lets a notice
 * reach everyone. Soft-deleted users never receive one.
 */
export function broadcastSkipReason(
  user: AudienceMember,
  run: Pick<RunContext, 'kind' | 'bypassConsent'>,
): SkipReason | null {
  if (user.deletedAt) return 'user_deleted';
  if (run.bypassConsent && run.kind === 'transactional') return null;
  if (user.emailDisposable) return 'disposable_address';
  if (!user.marketingConsentGiven) return 'no_consent';
  return null;
}

/** The provider could not be used for this page; what was sent before it broke has been recorded. */
export class DispatchInterrupted extends Error {
  constructor(readonly reason: unknown) {
    super(`broadcast dispatch interrupted: ${(reason as Error)?.message ?? String(reason)}`, {
      cause: reason,
    });
    this.name = 'DispatchInterrupted';
  }
}

/**
 * Sends one page (<= 100) of a run's audience with one batch call and records every recipient, its
 * e-mail log row, its audit entry and the run's counters in one statement.
 *
 * Resend's batch endpoint is all or nothing. When it refuses a batch (4xx for the messages) or keeps
 * failing with 5xx, each message is sent alone (3 attempts each) so one bad address fails alone. When the
 * provider is unreachable, rate limits us past the retries, or rejects our credentials, the page is left
 * unrecorded and the run is resumed later: those cases say nothing about the recipients.
 */
@Injectable()
export class BroadcastSender {
  constructor(
    private readonly email: EmailService,
    private readonly provider: EmailProvider,
    private readonly repository: BroadcastsRepository,
  ) {}

  async process(run: RunContext, users: AudienceMember[], signal?: AbortSignal): Promise<RecipientCounts> {
    const outcomes = new Map<string, Outcome>();
    const sendable: { user: AudienceMember; message: OutboundEmail }[] = [];
    for (const user of users) {
      const reason = broadcastSkipReason(user, run);
      if (reason) {
        outcomes.set(user.id, { status: 'skipped', reason });
        continue;
      }
      const message = this.email.compose(user, {
        templateKey: run.templateKey,
        idempotencyKey: recipientKey(run.id, user.id),
        tags: { broadcast: run.id },
        unsubscribe: !run.bypassConsent,
      });
      sendable.push({ user, message });
    }
    // A batch that cannot go out throws before anything is recorded for this page.
    let interruption: unknown = null;
    if (sendable.length > 0 && !(await this.sendBatch(run, sendable, outcomes, signal))) {
      // Sent one by one: whatever went out before an interruption is recorded, then the run waits.
      await this.sendOneByOne(sendable, outcomes, signal).catch((err: unknown) => (interruption = err));
    }
    const counts = await this.record(run, new Map(users.map((user) => [user.id, user])), outcomes);
    if (interruption) throw interruption;
    return counts;
  }

  /** True when the batch went out; false when it should be split; throws when the page must wait. */
  private async sendBatch(
    run: RunContext,
    sendable: { user: AudienceMember; message: OutboundEmail }[],
    outcomes: Map<string, Outcome>,
    signal?: AbortSignal,
  ): Promise<boolean> {
    try {
      const key = batchKey(
        run.id,
        sendable.map(({ user }) => user.id),
      );
      const results = await this.provider.sendBatch(
        sendable.map(({ message }) => message),
        key,
        { signal },
      );
      sendable.forEach(({ user, message }, i) =>
        outcomes.set(user.id, { status: 'sent', providerId: results[i]?.id ?? null, message }),
      );
      return true;
    } catch (err) {
      const splittable =
        !signal?.aborted &&
        err instanceof EmailSendError &&
        (err.kind === 'rejected' || err.kind === 'server_error');
      // Nothing recorded for this page: the resumed run sends the same recipients under the same key.
      if (!splittable) throw new DispatchInterrupted(err);
      return false;
    }
  }

  private async sendOneByOne(
    sendable: { user: AudienceMember; message: OutboundEmail }[],
    outcomes: Map<string, Outcome>,
    signal?: AbortSignal,
  ): Promise<void> {
    let outageStreak = 0;
    for (const { user, message } of sendable) {
      try {
        const { id } = await this.provider.send(message, { signal });
        outcomes.set(user.id, { status: 'sent', providerId: id, message });
        outageStreak = 0;
      } catch (err) {
        const usable = !signal?.aborted && err instanceof EmailSendError && err.kind !== 'misconfigured';
        if (!usable) throw new DispatchInterrupted(err);
        outcomes.set(user.id, { status: 'failed', error: err.message, message });
        outageStreak = err.kind === 'rejected' ? 0 : outageStreak + 1;
        if (outageStreak >= OUTAGE_STREAK) throw new DispatchInterrupted(err);
      }
    }
  }

  /** One atomic statement per page: recipient rows, e-mail log rows, audit entries, run counters. */
  private async record(
    run: RunContext,
    byId: Map<string, AudienceMember>,
    outcomes: Map<string, Outcome>,
  ): Promise<RecipientCounts> {
    const rows: PageRow[] = [];
    for (const [userId, outcome] of outcomes) {
      const user = byId.get(userId);
      if (!user) continue;
      const error =
        outcome.status === 'skipped' ? outcome.reason : outcome.status === 'failed' ? outcome.error : null;
      const body =
        outcome.status === 'skipped' ? { html: null, text: null } : this.email.storedBody(outcome.message);
      rows.push({
        userId,
        identityUserId: user.identityUserId,
        email: user.email,
        status: outcome.status,
        error,
        providerMessageId: outcome.status === 'sent' ? outcome.providerId : null,
        subject: outcome.status === 'skipped' ? '' : outcome.message.subject,
        ...body,
        messageId: randomUUID(),
        auditDetails: curateDetails({
          template: run.templateKey,
          kind: run.kind,
          broadcast_id: run.id,
          ...(outcome.status === 'skipped' ? { reason: outcome.reason } : {}),
          ...(outcome.status === 'failed' ? { error: outcome.error } : {}),
        }),
      });
    }
    return this.repository.recordPage(run.id, run.templateKey, run.kind, rows);
  }
}
