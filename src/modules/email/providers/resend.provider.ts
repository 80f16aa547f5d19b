import { Injectable, Logger } from '@nestjs/common';
import { z } from 'zod';
import { AppConfig } from '../../../config/app-config.js';
import { HttpClient, ProviderHttpError } from '../../../infra/http/http-client.js';
import type { OutboundEmail } from '../email.types.js';
import {
  EmailProvider,
  EmailSendError,
  MAX_BATCH_SIZE,
  type SendFailureKind,
  type SendOptions,
  type SendResult,
} from './email-provider.js';
import { EmailRateCeiling } from './rate-ceiling.js';

const sentSchema = z.object({ id: z.string().min(1) });
const batchSchema = z.object({ data: z.array(sentSchema) });

/** Resend allows tag names and values of ASCII letters, digits, `_` and `-` only. */
const tagValue = (value: string) => value.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 256);

function classify(status: number, body: unknown): SendFailureKind {
  if (status === 401 || status === 403 || status === 404) return 'misconfigured';
  if (status === 409) {
    const name = (body as { name?: unknown } | null)?.name;
    return name === 'invalid_idempotent_request' ? 'duplicate' : 'conflict';
  }
  if (status === 429) return 'unavailable';
  if (status >= 500) return 'server_error';
  return 'rejected';
}

/**
 * Resend-shaped HTTP API at EMAIL_API_URL: `POST /emails` and `POST /emails/batch` with an
 * Idempotency-Key. Every attempt (retries included) first takes a slot from the Redis-shared ceiling,
 * and every answer's rate-limit headers feed back into it. Written on the platform HttpClient rather
 * than the `resend` SDK (not installed) so retries, timeouts and response validation are the same as
 * for every other provider.
 */
@Injectable()
export class ResendEmailProvider extends EmailProvider {
  readonly name = 'resend';
  private readonly logger = new Logger(ResendEmailProvider.name);

  constructor(
    private readonly config: AppConfig,
    private readonly http: HttpClient,
    private readonly ceiling: EmailRateCeiling,
  ) {
    super();
  }

  async send(message: OutboundEmail, options: SendOptions = {}): Promise<SendResult> {
    const body = await this.post('/emails', toResend(message), message.idempotencyKey, options);
    const parsed = sentSchema.safeParse(body);
    if (!parsed.success) {
      this.logger.warn('e-mail provider accepted a message with an unexpected answer');
      return { id: null };
    }
    return { id: parsed.data.id };
  }

  async sendBatch(
    messages: OutboundEmail[],
    idempotencyKey: string,
    options: SendOptions = {},
  ): Promise<SendResult[]> {
    if (messages.length === 0) return [];
    if (messages.length > MAX_BATCH_SIZE) throw new Error(`a batch holds at most ${MAX_BATCH_SIZE} messages`);
    const body = await this.post('/emails/batch', messages.map(toResend), idempotencyKey, options);
    const parsed = batchSchema.safeParse(body);
    // A 2xx means the provider took the batch; without usable ids we still record the messages as sent.
    if (!parsed.success || parsed.data.data.length !== messages.length) {
      this.logger.warn('e-mail provider accepted a batch with an unexpected answer');
      return messages.map(() => ({ id: null }));
    }
    return parsed.data.data.map(({ id }) => ({ id }));
  }

  private async post(path: string, json: unknown, idempotencyKey: string, options: SendOptions) {
    try {
      const response = await this.http.request({
        method: 'POST',
        url: `${this.config.email.apiUrl.replace(/\/+$/, '')}${path}`,
        provider: 'email',
        headers: {
          authorization: `Bearer ${this.config.email.apiKey ?? ''}`,
          'idempotency-key': idempotencyKey.slice(0, 256),
        },
        json,
        // The spec's "e-mail send retries: 3": one attempt plus EMAIL_SEND_RETRIES on 429/5xx/network.
        // A caller with a budget across job attempts (EmailService) may allow fewer.
        maxAttempts: Math.max(
          1,
          Math.min(options.maxRequests ?? Infinity, this.config.email.sendRetries + 1),
        ),
        signal: options.signal,
        beforeAttempt: async () => {
          await this.ceiling.acquire(options.signal);
          await options.onRequest?.();
        },
        onResponse: ({ status, headers }) => this.ceiling.observe(status, headers),
      });
      return response.body;
    } catch (err) {
      if (options.signal?.aborted) throw err;
      if (err instanceof ProviderHttpError) {
        throw new EmailSendError(
          classify(err.httpStatus, err.responseBody),
          err.httpStatus,
          providerMessage(err),
          err,
        );
      }
      throw new EmailSendError('unavailable', null, (err as Error).message, err);
    }
  }
}

function toResend(message: OutboundEmail) {
  return {
    from: message.from,
    to: [message.to],
    subject: message.subject,
    html: message.html,
    text: message.text,
    ...(Object.keys(message.headers).length > 0 ? { headers: message.headers } : {}),
    ...(message.tags
      ? {
          tags: Object.entries(message.tags).map(([name, value]) => ({
            name: tagValue(name),
            value: tagValue(value),
          })),
        }
      : {}),
  };
}

/** The provider's own error message (Resend: `{name, message}`), clipped; never our request body. */
function providerMessage(err: ProviderHttpError): string {
  const body = err.responseBody as { message?: unknown; name?: unknown } | null;
  const detail = body && typeof body.message === 'string' ? body.message : '';
  return `provider answered ${err.httpStatus}${detail ? `: ${detail}` : ''}`.slice(0, 300);
}
