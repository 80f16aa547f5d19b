import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { AppConfig } from '../../config/app-config.js';
import { BadGatewayError, DependencyError } from '../../common/errors/app-error.js';
import { HttpClient, ProviderHttpError } from '../../infra/http/http-client.js';

/** The parts of the provider's subscription entity we read back after an operation. */
const providerSubscription = z.looseObject({
  id: z.string().min(1),
  status: z.enum(['active', 'trialing', 'past_due', 'paused', 'canceled']),
  scheduled_change: z
    .looseObject({ action: z.string(), effective_at: z.string(), resume_at: z.string().nullish() })
    .nullish(),
});
const subscriptionEnvelope = z.looseObject({ data: providerSubscription });

export type ProviderSubscription = z.output<typeof providerSubscription>;
/** An entity checked by its consumer (the drift check parses it with the webhook's subscription schema). */
const anyEnvelope = z.looseObject({ data: z.unknown() });

/** One page of the provider's event log (Paddle `GET /events`); events are checked again at intake. */
const eventPage = z.looseObject({
  data: z
    .array(
      z.looseObject({
        event_id: z.string().min(1).max(200),
        event_type: z.string().min(1).max(100),
        occurred_at: z.unknown(),
        data: z.unknown(),
      }),
    )
    .max(1000),
  meta: z.looseObject({
    pagination: z.looseObject({ per_page: z.number().int().nullish(), has_more: z.boolean() }),
  }),
});
export type ProviderEventPage = z.output<typeof eventPage>;
export type EffectiveFrom = 'next_billing_period' | 'immediately';

/** The provider refused the request (4xx other than 429): our request or its state is the problem. */
export class BillingRejectedError extends BadGatewayError {
  constructor(readonly providerStatus: number) {
    super(`The billing provider refused the request (${providerStatus}).`, 'billing_rejected');
  }
}

/**
 * Typed client of the billing provider's REST API (Paddle-shaped). Goes through the platform
 * HttpClient: 30 s timeout, at most 3 attempts with exponential backoff on 429/5xx, responses validated.
 * Errors come out as 503 (unavailable after the retries; the caller may retry) or 502 (refused or an
 * invalid answer), never as a 500.
 */
@Injectable()
export class BillingApiClient {
  constructor(
    private readonly http: HttpClient,
    private readonly config: AppConfig,
  ) {}

  cancel(subscriptionId: string, effectiveFrom: EffectiveFrom): Promise<ProviderSubscription> {
    return this.call('POST', `/subscriptions/${encodeURIComponent(subscriptionId)}/cancel`, {
      effective_from: effectiveFrom,
    });
  }

  changePrice(subscriptionId: string, priceId: string, quantity: number): Promise<ProviderSubscription> {
    return this.call('PATCH', `/subscriptions/${encodeURIComponent(subscriptionId)}`, {
      items: [{ price_id: priceId, quantity }],
      proration_billing_mode: 'prorated_next_billing_period',
    });
  }

  resume(subscriptionId: string): Promise<ProviderSubscription> {
    return this.call('POST', `/subscriptions/${encodeURIComponent(subscriptionId)}/resume`, {
      effective_from: 'immediately',
    });
  }

  get(subscriptionId: string): Promise<ProviderSubscription> {
    return this.call('GET', `/subscriptions/${encodeURIComponent(subscriptionId)}`);
  }

  /** The whole subscription entity (the drift check applies it through the state machine). */
  subscription(subscriptionId: string): Promise<unknown> {
    return this.call(
      'GET',
      `/subscriptions/${encodeURIComponent(subscriptionId)}`,
      undefined,
      anyEnvelope,
    ).then((body) => body.data);
  }

  /** The provider's event log after `after` (an event id; from the oldest it keeps when null), oldest first. */
  events(after: string | null, perPage: number): Promise<ProviderEventPage> {
    const query = new URLSearchParams({ per_page: String(perPage), ...(after ? { after } : {}) });
    return this.call('GET', `/events?${query.toString()}`, undefined, eventPage);
  }

  private call(method: 'GET' | 'POST' | 'PATCH', path: string, json?: object): Promise<ProviderSubscription>;
  private call<S extends z.ZodType>(
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    json: object | undefined,
    schema: S,
  ): Promise<z.output<S>>;
  private async call(
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    json?: object,
    schema?: z.ZodType,
  ): Promise<unknown> {
    const { apiKey, apiUrl } = this.config.billing;
    if (!apiKey || !apiUrl)
      throw new DependencyError('The billing provider is not configured.', 'billing_not_configured');
    try {
      const response = await this.http.request({
        method,
        url: `${apiUrl.replace(/\/+$/, '')}${path}`,
        headers: { authorization: `Bearer ${apiKey}` },
        json,
        schema: schema ?? subscriptionEnvelope,
        provider: 'billing',
      });
      return schema ? response.body : (response.body as z.output<typeof subscriptionEnvelope>).data;
    } catch (err) {
      if (err instanceof ProviderHttpError) {
        if (err.httpStatus === 429 || err.httpStatus >= 500) {
          throw new DependencyError(
            'The billing provider is unavailable; try again shortly.',
            'billing_unavailable',
            err,
          );
        }
        throw new BillingRejectedError(err.httpStatus);
      }
      if (err instanceof DependencyError) {
        throw new DependencyError(
          'The billing provider is unreachable; try again shortly.',
          'billing_unavailable',
          err,
        );
      }
      throw err;
    }
  }
}
