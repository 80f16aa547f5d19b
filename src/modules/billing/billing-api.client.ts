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

  private async call(
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    json?: object,
  ): Promise<ProviderSubscription> {
    const { apiKey, apiUrl } = this.config.billing;
    if (!apiKey || !apiUrl)
      throw new DependencyError('The billing provider is not configured.', 'billing_not_configured');
    try {
      const response = await this.http.request({
        method,
        url: `${apiUrl.replace(/\/+$/, '')}${path}`,
        headers: { authorization: `Bearer ${apiKey}` },
        json,
        schema: subscriptionEnvelope,
        provider: 'billing',
      });
      return response.body.data;
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
