import { Injectable, Logger } from '@nestjs/common';
import type { OutboundEmail } from './email.types.js';
import { EmailProvider, EmailSendError } from './providers/email-provider.js';
import { EmailSendBudget } from './send-budget.js';

/** What the provider made of one message of a batch. */
export type DeliveryOutcome =
  { status: 'sent'; providerId: string | null } | { status: 'failed'; error: string };

/** The provider could not be used now; what is not recorded stays pending and the run resumes later. */
export class DeliveryInterrupted extends Error {
  constructor(readonly reason: unknown) {
    super(`e-mail delivery interrupted: ${(reason as Error)?.message ?? String(reason)}`, {
      cause: reason,
    });
    this.name = 'DeliveryInterrupted';
  }
}

/**
 * What became of a batch request: `sent` (the provider holds this very body under the key: taken now, or
 * replayed from an earlier attempt with the same body), `sent_before` (the key already holds another body:
 * 409 `invalid_idempotent_request`, an earlier attempt's batch went out and nothing was delivered now),
 * `refused` (400/422: nothing delivered; the messages go out one by one), `gave_up` (this attempt spent
 * the key's budget of 1 + EMAIL_SEND_RETRIES requests without a definitive answer: every message `failed`,
 * and the provider is failing now), `spent` (an earlier attempt spent it: every message `failed`, no request
 * made now), `unknown` (400/422 to a batch whose key an earlier attempt had used: that request may have
 * delivered another body, so the messages are not sent alone; every message `failed`).
 */
export type BatchResult = 'sent' | 'sent_before' | 'refused' | 'gave_up' | 'spent' | 'unknown';

/** A batch's result; `gave_up` carries the provider's last error (an outage's error keeps the run resumable). */
export type BatchAnswer =
  { result: Exclude<BatchResult, 'gave_up'> } | { result: 'gave_up'; cause: EmailSendError };

/** Consecutive per-message provider outages after which the provider counts as down for the rest of the batch. */
const OUTAGE_STREAK = 3;

/**
 * Batch delivery (moved from broadcasts/, issue 16 item 1): one provider batch request under an idempotency
 * key, or message by message with the outage rule. Outcomes are keyed by the caller's id for each message;
 * a DeliveryInterrupted means the rest must wait for a later attempt under the same key. Resend's batch
 * endpoint is all or nothing: only a batch refused outright (400/422, nothing delivered) is `refused`, to
 * go out one by one; an ambiguous outcome interrupts, since a new key could deliver twice, until the key's
 * request budget (EmailSendBudget, the one a single e-mail has) is spent: then the batch has failed.
 */
@Injectable()
export class EmailBatchDelivery {
  private readonly logger = new Logger(EmailBatchDelivery.name);

  constructor(
    private readonly provider: EmailProvider,
    private readonly budget: EmailSendBudget,
  ) {}

  /**
   * Every message has its outcome unless the batch was `refused` (it goes out alone then). A batch may make
   * 1 + EMAIL_SEND_RETRIES provider requests in total under its key, across job attempts, resumes and the
   * sweep's pushes (issue 13 item 9): a resumed batch makes what is left, and one with nothing left fails.
   */
  async sendBatch(
    messages: { id: string; message: OutboundEmail }[],
    key: string,
    outcomes: Map<string, DeliveryOutcome>,
    signal?: AbortSignal,
  ): Promise<BatchAnswer> {
    // Nothing left either once the provider's idempotency window has passed (send-budget.ts).
    const budget = await this.budget.state(key);
    if (budget.spent) {
      this.giveUp(messages, key, outcomes, budget.spent);
      return { result: 'spent' };
    }
    try {
      const results = await this.provider.sendBatch(
        messages.map(({ message }) => message),
        key,
        { signal, maxRequests: budget.left, onRequest: () => this.budget.count(key) },
      );
      messages.forEach(({ id }, i) =>
        outcomes.set(id, { status: 'sent', providerId: results[i]?.id ?? null }),
      );
      return { result: 'sent' };
    } catch (err) {
      if (signal?.aborted || !(err instanceof EmailSendError)) throw new DeliveryInterrupted(err);
      if (err.kind === 'duplicate') {
        // The key, unique to this batch, was used before: an earlier attempt was accepted.
        for (const { id } of messages) outcomes.set(id, { status: 'sent', providerId: null });
        return { result: 'sent_before' };
      }
      if (err.kind === 'rejected') {
        // Nothing of this body was delivered, but an earlier attempt's request under the key (another
        // body: the batch was gated again, an address changed) may have been: sent alone now, its members
        // could get it twice. Its outcome is unknown: failed, as with a spent budget (at most once).
        if (budget.used > 0) {
          this.giveUp(messages, key, outcomes, refusedAfterRequestError(err.message, budget.used));
          return { result: 'unknown' };
        }
        return { result: 'refused' };
      }
      // No definitive answer and no request left: the batch failed, as a single e-mail does.
      const { spent } = await this.budget.state(key, err.message);
      if (spent) {
        this.giveUp(messages, key, outcomes, spent);
        return { result: 'gave_up', cause: err };
      }
      // Nothing settled: the pending batch is resent under the same key, with what is left, by the next attempt.
      throw new DeliveryInterrupted(err);
    }
  }

  private giveUp(
    messages: { id: string }[],
    key: string,
    outcomes: Map<string, DeliveryOutcome>,
    error: string,
  ): void {
    for (const { id } of messages) outcomes.set(id, { status: 'failed', error });
    this.logger.warn({ batch_key: key, messages: messages.length, err: error }, 'e-mail batch failed');
  }

  /**
   * Each message under its recipient's own key, with that key's budget (1 + EMAIL_SEND_RETRIES requests
   * in total, across attempts, as any e-mail). A rejection fails that recipient alone; so does any answer
   * that is not definitive (5xx/429/unreachable past the retries, a 409 while the key is in progress, a
   * credential error) once the message has no request left, and a message whose budget an earlier attempt
   * spent fails without a request. With requests left such an answer (or a cancelled request) stops here:
   * the message is resent under its key by a later attempt. OUTAGE_STREAK failures in a row mean the
   * provider is down: the messages not yet tried stay pending (their budget untouched) for a later attempt.
   */
  async sendOneByOne(
    messages: { id: string; message: OutboundEmail }[],
    outcomes: Map<string, DeliveryOutcome>,
    signal?: AbortSignal,
  ): Promise<void> {
    let streak = 0;
    for (const [index, { id: recipientId, message }] of messages.entries()) {
      const key = message.idempotencyKey;
      const budget = await this.budget.state(key);
      if (budget.spent) {
        outcomes.set(recipientId, { status: 'failed', error: budget.spent });
        continue;
      }
      try {
        const { id } = await this.provider.send(message, {
          signal,
          maxRequests: budget.left,
          onRequest: () => this.budget.count(key),
        });
        outcomes.set(recipientId, { status: 'sent', providerId: id });
      } catch (err) {
        if (signal?.aborted || !(err instanceof EmailSendError)) throw new DeliveryInterrupted(err);
        if (err.kind === 'duplicate') outcomes.set(recipientId, { status: 'sent', providerId: null });
        else if (err.kind === 'rejected') outcomes.set(recipientId, { status: 'failed', error: err.message });
        else {
          // No definitive answer: resent under its key by a later attempt while it has requests left.
          const { spent } = await this.budget.state(key, err.message);
          if (!spent) throw new DeliveryInterrupted(err);
          outcomes.set(recipientId, { status: 'failed', error: spent });
          streak += 1;
          if (streak >= OUTAGE_STREAK && index < messages.length - 1) throw new DeliveryInterrupted(err);
          continue;
        }
      }
      streak = 0;
    }
  }
}

/** Why the members of a resent batch the provider refused are recorded failed instead of sent alone. */
function refusedAfterRequestError(answer: string, earlier: number): string {
  return (
    `${answer}; outcome unknown: ${earlier} earlier provider request(s) under the batch key may have ` +
    'delivered it, so it is not sent one by one'
  );
}
