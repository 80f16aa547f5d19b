import type { IncomingHttpHeaders } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { DependencyError, UnauthenticatedError } from '../../common/errors/app-error.js';
import type { WebhookProvider } from './webhook-inbox.repository.js';
import type { WebhookRefusalsService } from './webhook-refusals.service.js';
import { unstorableBody } from './storable-payload.js';
import { InvalidWebhookPayloadError } from './webhook-payload.error.js';

const HEADER_PARTS = ['id', 'timestamp', 'signature'] as const;

/** A verified Standard Webhooks delivery: the message id (the dedupe key), its timestamp and parsed body. */
export interface VerifiedDelivery {
  id: string;
  timestamp: Date;
  payload: unknown;
}

/**
 * Receivers of Standard Webhooks (Svix) senders: the identity provider (Clerk) and the e-mail provider
 * (Resend). One rule for both: both header sets (`webhook-*` and `svix-*`), the library's 5-minute
 * tolerance and constant-time comparison, several `v1,` signatures, the current secret then the previous
 * one during a rotation; a bad signature is 401 with nothing stored, a verified body that no archive row
 * can hold is 400 with a `webhook.failed` entry.
 */
export class StandardWebhooksVerifier {
  private readonly verifiers: Webhook[];

  constructor(
    private readonly provider: WebhookProvider,
    private readonly variable: string,
    secrets: (string | null | undefined)[],
    private readonly refusals: WebhookRefusalsService,
  ) {
    this.verifiers = secrets.filter((secret): secret is string => !!secret).map((s) => this.verifierFor(s));
  }

  async verify(rawBody: Buffer | undefined, headers: IncomingHttpHeaders): Promise<VerifiedDelivery> {
    if (this.verifiers.length === 0) {
      throw new DependencyError(
        `${capitalized(this.provider)} webhooks are not configured.`,
        'webhook_not_configured',
      );
    }
    const standard: Record<string, string> = {};
    for (const part of HEADER_PARTS) {
      const value = headers[`webhook-${part}`] ?? headers[`svix-${part}`];
      const single = Array.isArray(value) ? value[0] : value;
      if (single) standard[`webhook-${part}`] = single;
    }
    const id = standard['webhook-id'];
    try {
      if (!id || id.length > 255) throw new WebhookVerificationError('Missing or invalid message id');
      verifyWithAny(this.verifiers, rawBody ?? Buffer.alloc(0), standard);
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      this.refusals.refused(this.provider, { reason: 'invalid_signature', detail: err.message });
      throw new UnauthenticatedError('The webhook signature is invalid or expired.', 'invalid_signature');
    }
    let payload: unknown;
    try {
      payload = JSON.parse((rawBody ?? Buffer.alloc(0)).toString('utf8'));
    } catch {
      // Archived FAILED under the message id by the inbox (the envelope check fails), and audited there.
      payload = { unparsable: true };
    }
    const unstorable = unstorableBody(rawBody ?? Buffer.alloc(0), payload);
    if (unstorable) {
      await this.refusals.unarchivable(this.provider, {
        reason: 'unstorable',
        body: rawBody,
        eventId: id,
        detail: unstorable,
      });
      // Verified, but no archive row could hold it: the sender's bug, answered like a malformed event.
      throw new InvalidWebhookPayloadError(`The ${this.provider} event cannot be stored: ${unstorable}.`, [
        { field: '(body)', message: unstorable },
      ]);
    }
    return { id: id!, timestamp: new Date(Number(standard['webhook-timestamp']) * 1000), payload };
  }

  /** A secret the library cannot decode stops the boot with a message naming the variable. */
  private verifierFor(secret: string): Webhook {
    try {
      return new Webhook(secret);
    } catch (err) {
      throw new Error(
        `${this.variable} is not a Standard Webhooks secret (whsec_<base64>): ${(err as Error).message}`,
        { cause: err },
      );
    }
  }
}

function verifyWithAny(verifiers: Webhook[], body: Buffer, headers: Record<string, string>): void {
  let last: unknown;
  for (const verifier of verifiers) {
    try {
      verifier.verify(body, headers, { jsonParse: false });
      return;
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

const capitalized = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
