import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import type { z } from 'zod';
import { AppConfig } from '../../config/app-config.js';
import { AppError, BadGatewayError, DependencyError } from '../../common/errors/app-error.js';
import { inSpan, SpanKind, tracingEnabled } from '../tracing/spans.js';
import { RETRY_AFTER_CAP_MS } from './retry-policy.js';

export interface HttpRequest<S extends z.ZodType | undefined = undefined> {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** Serialized as JSON. */
  json?: unknown;
  /** Validates a 2xx response body before anyone uses it (spec rule 5). */
  schema?: S;
  timeoutMs?: number;
  maxAttempts?: number;
  /** Name used in errors and logs ("billing", "email", ...). */
  provider: string;
  /** Cancels the request and its retries (e.g. a worker shutting down). */
  signal?: AbortSignal;
  /** Awaited before every attempt, retries included (e.g. a rate ceiling shared across workers). */
  beforeAttempt?: () => Promise<void>;
  /** Sees every response, including the ones that will be retried (e.g. provider rate-limit headers). */
  onResponse?: (response: { status: number; headers: Headers }) => void | Promise<void>;
  /** Largest response body accepted (default DEFAULT_MAX_RESPONSE_BYTES); more is a 502, never buffered. */
  maxResponseBytes?: number;
  /**
   * Whether a non-2xx answer is worth asking again (default isRetryableStatus: 429 and 5xx). A provider
   * whose 429 can also mean a state no retry clears (OpenAI's `insufficient_quota`) narrows it.
   */
  retryable?: (status: number, body: unknown) => boolean;
}

/** A provider answer is a few kB; 10 MiB leaves room for any legitimate one and bounds a hostile one. */
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

export interface HttpResponse<T> {
  status: number;
  headers: Headers;
  body: T;
  attempts: number;
}

/**
 * A non-2xx answer after the retries were used up (or a non-retryable status): the last response's
 * status, body and headers (e.g. its Retry-After). `responseHeaders` are the provider's and are never
 * sent on; AppError's own `headers` are the ones our answer carries.
 */
export class ProviderHttpError extends BadGatewayError {
  constructor(
    readonly provider: string,
    readonly httpStatus: number,
    readonly responseBody: unknown,
    readonly responseHeaders: Headers = new Headers(),
  ) {
    super(`${provider} answered ${httpStatus}.`, 'upstream_error');
  }
}

/** Statuses worth asking again: rate-limited or the provider failing. */
export const isRetryableStatus = (status: number): boolean => status === 429 || status >= 500;
const sleep = (ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal });

/** Retry-After in seconds or as an HTTP date, capped so one provider cannot stall a worker for long. */
export function retryAfterMs(headers: Headers, capMs = RETRY_AFTER_CAP_MS): number | null {
  const value = headers.get('retry-after');
  if (!value) return null;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), capMs) : null;
}

/**
 * The one outbound HTTP client: 30 s timeout, at most 3 attempts with exponential backoff (and the
 * provider's Retry-After) on 429/5xx and network errors, JSON in and out, responses validated.
 * Written on fetch rather than a library because it is this small and every provider shares it.
 */
@Injectable()
export class HttpClient {
  private readonly logger = new Logger(HttpClient.name);
  /** Base of the exponential backoff; tests shorten it. */
  backoffBaseMs = 250;

  constructor(private readonly config: AppConfig) {}

  async request<S extends z.ZodType | undefined = undefined>(
    req: HttpRequest<S>,
  ): Promise<HttpResponse<S extends z.ZodType ? z.output<S> : unknown>> {
    if (!tracingEnabled()) return this.send(req);
    // One CLIENT span per provider call, its retries included; the URL without its query string.
    const url = new URL(req.url);
    return inSpan(
      `${req.method} ${req.provider}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': req.method,
          'server.address': url.hostname,
          'url.full': `${url.origin}${url.pathname}`,
          'peer.service': req.provider,
        },
      },
      async (span) => {
        const response = await this.send(req);
        span?.setAttribute('http.response.status_code', response.status);
        span?.setAttribute('http.request.resend_count', response.attempts - 1);
        return response;
      },
    );
  }

  private async send<S extends z.ZodType | undefined = undefined>(
    req: HttpRequest<S>,
  ): Promise<HttpResponse<S extends z.ZodType ? z.output<S> : unknown>> {
    const maxAttempts = req.maxAttempts ?? this.config.http.maxAttempts;
    const timeoutMs = req.timeoutMs ?? this.config.http.timeoutMs;
    let lastError: unknown;
    for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
      req.signal?.throwIfAborted();
      if (req.beforeAttempt) await req.beforeAttempt();
      let response: Response;
      let body: unknown;
      try {
        // One deadline per attempt, covering the headers and the body: undici aborts the body stream
        // with the request's signal, so a provider that stalls after its headers times out here too.
        const timeout = AbortSignal.timeout(timeoutMs);
        response = await fetch(req.url, {
          method: req.method,
          headers: {
            accept: 'application/json',
            ...(req.json !== undefined ? { 'content-type': 'application/json' } : {}),
            ...req.headers,
          },
          body: req.json !== undefined ? JSON.stringify(req.json) : undefined,
          signal: req.signal ? AbortSignal.any([req.signal, timeout]) : timeout,
          redirect: 'error',
        });
        // Inside the try: a body that times out or is cut off (connection reset mid-body) is the same
        // network failure as one that never started, retried and finally reported as unreachable.
        body = await this.readBody(response, req);
      } catch (err) {
        // Our own verdicts on the answer (too large) are not network failures: no retry.
        if (err instanceof AppError) throw err;
        // Cancelled by the caller: no retry, the caller knows why.
        if (req.signal?.aborted) throw err;
        lastError = err;
        this.logger.warn(
          { provider: req.provider, attempt, err: (err as Error).message },
          'provider request failed',
        );
        if (attempt < maxAttempts) await sleep(this.backoff(attempt), req.signal);
        continue;
      }
      if (req.onResponse) await req.onResponse({ status: response.status, headers: response.headers });
      if (response.ok) {
        if (!req.schema)
          return {
            status: response.status,
            headers: response.headers,
            body: body as never,
            attempts: attempt,
          };
        const parsed = req.schema.safeParse(body);
        if (!parsed.success) {
          throw new BadGatewayError(
            `${req.provider} sent a response that does not match its contract.`,
            'upstream_invalid_response',
          );
        }
        return {
          status: response.status,
          headers: response.headers,
          body: parsed.data as never,
          attempts: attempt,
        };
      }
      lastError = new ProviderHttpError(req.provider, response.status, body, response.headers);
      const retryable = req.retryable ?? isRetryableStatus;
      if (!retryable(response.status, body) || attempt === maxAttempts) throw lastError;
      this.logger.warn(
        { provider: req.provider, attempt, status: response.status },
        'provider answered with a retryable status',
      );
      await sleep(retryAfterMs(response.headers) ?? this.backoff(attempt), req.signal);
    }
    if (lastError instanceof ProviderHttpError) throw lastError;
    throw new DependencyError(`${req.provider} is unreachable.`, 'upstream_unreachable', lastError);
  }

  private backoff(attempt: number): number {
    const base = this.backoffBaseMs * 2 ** (attempt - 1);
    return base + Math.floor(Math.random() * base * 0.2);
  }

  /**
   * Reads at most `maxResponseBytes`: a compromised or broken provider must not make us buffer an
   * unbounded body (OWASP API10). Too large is an invalid answer (502), not retried.
   */
  private async readBody(response: Response, req: HttpRequest<z.ZodType | undefined>): Promise<unknown> {
    const limit = req.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const tooLarge = () =>
      new BadGatewayError(
        `${req.provider} sent a response larger than ${limit} bytes.`,
        'upstream_response_too_large',
      );
    if (Number(response.headers.get('content-length') ?? 0) > limit) {
      await response.body?.cancel().catch(() => undefined);
      throw tooLarge();
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (response.body) {
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.byteLength;
        if (size > limit) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge();
        }
        chunks.push(value);
      }
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
}
