import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };
/** Every request and response body of the API, by schema name (e.g. `Schemas['MeResponseDto']`). */
export type Schemas = components['schemas'];
/** The one error body of the API (RFC 9457 application/problem+json). */
export type ProblemDetails = Schemas['ProblemDetails'];
export type ApiClient = Client<paths>;

export interface ApiClientOptions extends ClientOptions {
  /**
   * The access token (or API key) for a request, read before each one so a refreshed token is used;
   * return null or undefined to send none (public routes).
   */
  token?: () => string | null | undefined | Promise<string | null | undefined>;
}

/**
 * A typed client: `client.GET('/api/v1/me')` answers `{ data, error, response }` where `data` is the
 * success body and `error` the ProblemDetails of a 4xx/5xx, both typed from openapi.json.
 */
export function createApiClient(options: ApiClientOptions = {}): ApiClient {
  const { token, ...clientOptions } = options;
  const client = createClient<paths>(clientOptions);
  if (token) {
    client.use({
      async onRequest({ request }) {
        const value = await token();
        if (value && !request.headers.has('Authorization')) {
          request.headers.set('Authorization', `Bearer ${value}`);
        }
        return request;
      },
    });
  }
  return client;
}

/** Whether a value is a problem+json body (e.g. the `error` of a call, or a caught value). */
export function isProblem(value: unknown): value is ProblemDetails {
  if (typeof value !== 'object' || value === null) return false;
  const { code, status } = value as { code?: unknown; status?: unknown };
  return typeof code === 'string' && typeof status === 'number';
}

export interface RateLimit {
  /** Requests allowed in the current window. */
  limit: number;
  /** Requests left in the current window. */
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
  /** The windows that apply (metered routes), e.g. `60;w=60, 5000;w=86400`. */
  policy: string | null;
  /** On a 429 or 503: seconds to wait before retrying. */
  retryAfterSeconds: number | null;
}

/** The `RateLimit-*` (and `Retry-After`) headers of a response, or null when it carries none. */
export function readRateLimit(response: Response): RateLimit | null {
  const limit = response.headers.get('RateLimit-Limit');
  if (limit === null) return null;
  const retryAfter = response.headers.get('Retry-After');
  return {
    limit: Number(limit),
    remaining: Number(response.headers.get('RateLimit-Remaining') ?? 0),
    resetSeconds: Number(response.headers.get('RateLimit-Reset') ?? 0),
    policy: response.headers.get('RateLimit-Policy'),
    retryAfterSeconds: retryAfter === null ? null : Number(retryAfter),
  };
}

/**
 * A fresh `Idempotency-Key`: create one per user action and reuse it for that action's retries, so a
 * retried metered call is charged once (the answer then carries `Idempotent-Replayed: true`).
 */
export const newIdempotencyKey = (): string => globalThis.crypto.randomUUID();

/** Whether a response is the stored answer of an earlier request with the same Idempotency-Key. */
export const isReplayed = (response: Response): boolean =>
  response.headers.get('Idempotent-Replayed') === 'true';
