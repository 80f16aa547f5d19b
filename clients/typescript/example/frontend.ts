// A frontend's calls through the typed client (the README shows the same). Type-checked by
// test/openapi/typescript-client.spec.ts, so it cannot drift from the API.
import {
  createApiClient,
  isProblem,
  isReplayed,
  newIdempotencyKey,
  readRateLimit,
  type ProblemDetails,
  type Schemas,
} from '../src/index.js';

/** Whatever holds the signed-in user's access token (the identity provider's SDK, locally `npm run dev:token`). */
declare function currentAccessToken(): Promise<string | null>;
/** The billing provider's browser SDK (Paddle.js), loaded by the page. */
declare const Paddle: {
  Checkout: {
    open(options: {
      items: { priceId: string; quantity: number }[];
      customer: { email: string };
      customData: Record<string, string>;
    }): void;
  };
};

export const api = createApiClient({ baseUrl: 'http://localhost:3000', token: currentAccessToken });

/** Problems carry a stable `code` to branch on, a `detail` to show and, for 400s, the fields at fault. */
export function explain(problem: ProblemDetails): string {
  if (problem.code === 'validation_failed')
    return (problem.errors ?? []).map((e) => `${e.field}: ${e.message}`).join('\n');
  return `${problem.detail} (request ${problem.request_id ?? 'unknown'})`;
}

export async function loadProfile(): Promise<Schemas['MeResponseDto'] | null> {
  const { data, error, response } = await api.GET('/api/v1/me');
  if (error) {
    if (response.status === 401) return null; // signed out
    throw new Error(explain(error));
  }
  return data;
}

export async function saveSearch(name: string, query: string) {
  const { data, error } = await api.POST('/api/v1/saved_searches', {
    body: { name, query, filters: { remote: true } },
  });
  if (error) throw new Error(explain(error));
  await api.PATCH('/api/v1/saved_searches/{id}', {
    params: { path: { id: data.id } },
    body: { name: `${name} (2)` },
  });
  const page = await api.GET('/api/v1/saved_searches', { params: { query: { page: 1, page_size: 20 } } });
  await api.DELETE('/api/v1/saved_searches/{id}', { params: { path: { id: data.id } } });
  return page.data?.items ?? [];
}

/** Upgrade: the checkout token ties the provider's checkout to this user; the tier follows by webhook. */
export async function upgrade(tier: 'PRO' | 'TEAM'): Promise<void> {
  const { data, error } = await api.POST('/api/v1/billing/checkout', { body: { tier } });
  if (error) throw new Error(explain(error)); // e.g. 409 when a subscription is already live
  Paddle.Checkout.open({
    items: [{ priceId: data.price_id, quantity: 1 }],
    customer: { email: data.customer_email },
    customData: { checkout_token: data.custom_data.checkout_token },
  });
  // After the overlay's success event, poll GET /api/v1/me until current_tier shows the new tier.
}

/** A metered completion with a retry that is never charged twice. */
export async function ask(question: string): Promise<string | null> {
  let key = newIdempotencyKey(); // one per user action, reused by its retries
  for (let attempt = 0; attempt < 3; attempt++) {
    const { data, error, response } = await api.POST('/api/v1/ai/completions', {
      params: { header: { 'Idempotency-Key': key } },
      body: { messages: [{ role: 'user', content: question }], max_tokens: 256 },
    });
    const limit = readRateLimit(response); // RateLimit-Limit / -Remaining / -Reset (/ -Policy)
    if (limit && limit.remaining === 0) console.warn(`rate limit reached; resets in ${limit.resetSeconds} s`);
    if (data) {
      if (isReplayed(response)) console.info('answered from the first attempt, charged once');
      return data.content;
    }
    if (error.code === 'insufficient_credits') throw new Error('Buy credits first.');
    // The provider refused the request itself (e.g. too long for the model): the same request fails again.
    if (error.code === 'completion_rejected') throw new Error(explain(error));
    if (response.status === 429 || response.status >= 500) {
      // A provider failure (upstream_*) was refunded and spends its key: the next attempt needs a new one.
      if (error.code.startsWith('upstream_')) key = newIdempotencyKey();
      await new Promise((resolve) => setTimeout(resolve, (limit?.retryAfterSeconds ?? 1) * 1000));
      continue;
    }
    throw new Error(explain(error));
  }
  return null;
}

/** E-mail preferences: news and offers only; account and billing messages are always sent. */
export async function setMarketingConsent(given: boolean) {
  const { data, error } = await api.PATCH('/api/v1/me', {
    body: { marketing_consent_given: given, marketing_consent_source: 'settings_page' },
  });
  if (error) throw new Error(explain(error));
  return data.marketing_consent_given;
}

/** The account page: download the data export, schedule the deletion, undo it within the grace period. */
export async function exportAccount(): Promise<Blob> {
  const { data, error } = await api.GET('/api/v1/account/me/export');
  if (error) throw new Error(explain(error));
  console.info(`export of ${data.generated_at}: ${data.saved_searches.length} saved searches`);
  return new Blob([JSON.stringify(data)], { type: 'application/json' });
}

export async function deleteAccount(): Promise<string> {
  const { data, error } = await api.DELETE('/api/v1/account/me');
  if (error) throw new Error(explain(error));
  // Until that date GET /api/v1/me answers with deleted_at set, and most other routes 403 account_deleted.
  return data.hard_delete_after;
}

export async function restoreAccount() {
  const { data, error } = await api.POST('/api/v1/account/me/restore');
  if (error) throw new Error(explain(error)); // 409 restore_window_closed after the grace period
  return data.deleted_at; // null again
}

/** Anything thrown or returned can be tested for the problem shape. */
export const describeFailure = (value: unknown): string =>
  isProblem(value) ? explain(value) : String(value);
