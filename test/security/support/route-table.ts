import { expect } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { ApiApp } from '../../support/test-env.js';
import { declaredRoutes, type DeclaredRoute, expectCovers, pathWith } from './routes.js';

/**
 * How a route is reached: `user` = Bearer JWT or API key; `admin` = allowlisted administrators (JWT
 * only); `webhook` = provider signature; `unsubscribe` = the signed token in `t`; `public` = nothing.
 */
export type Access = 'public' | 'user' | 'admin' | 'webhook' | 'unsubscribe';
export type IdKind = 'saved_search' | 'workspace' | 'api_key' | 'broadcast' | 'webhook_event';

export interface RouteCase {
  access: Access;
  /** A body the route accepts from a FREE user with nothing bought yet. */
  body?: Record<string, unknown>;
  /** The kind of row `:id` names. */
  idOf?: IdKind;
  /**
   * Refused with 403 when the caller authenticates with an API key, whoever owns it: admin routes, API key
   * management (in its service), the account lifecycle and export and the billing changes (@RefuseApiKeys,
   * in the guard).
   */
  apiKeyRefused?: boolean;
  /** Soft-deletes the caller: run it after every other route. */
  last?: boolean;
}

/**
 * The security suite's inventory: one entry per route the API serves. `expectRouteTableMatches` fails
 * when the application gains a route that is not listed here (or loses one), so every new route must be
 * classified before the suite passes again, and each file then walks it.
 */
export const ROUTE_TABLE: Record<string, RouteCase> = {
  'get /health': { access: 'public' },
  'get /health/ready': { access: 'public' },
  'get /status': { access: 'public' },
  'post /webhooks/identity': { access: 'webhook' },
  'post /webhooks/billing': { access: 'webhook' },
  'post /webhooks/email': { access: 'webhook' },
  'get /api/v1/email/unsubscribe': { access: 'unsubscribe' },
  'post /api/v1/email/unsubscribe': { access: 'unsubscribe' },
  // The double opt-in link: a signed token in `t`, like unsubscribe.
  'get /api/v1/email/confirm': { access: 'unsubscribe' },
  'post /api/v1/email/confirm': { access: 'unsubscribe' },

  'get /api/v1/me': { access: 'user' },
  'patch /api/v1/me': { access: 'user', body: { locale: 'fr', marketing_consent_given: true } },
  'post /api/v1/account/me/signup-metadata': { access: 'user', body: { utm_source: 'newsletter' } },
  'get /api/v1/account/me/export': { access: 'user', apiKeyRefused: true },
  'post /api/v1/account/me/restore': { access: 'user', apiKeyRefused: true },
  'delete /api/v1/account/me': { access: 'user', apiKeyRefused: true, last: true },
  'post /api/v1/feedback': { access: 'user', body: { message: 'Nice product', rating: 4 } },

  'post /api/v1/saved_searches': { access: 'user', body: { name: 'mine', query: 'q', filters: { a: 1 } } },
  'get /api/v1/saved_searches': { access: 'user' },
  'get /api/v1/saved_searches/:id': { access: 'user', idOf: 'saved_search' },
  'patch /api/v1/saved_searches/:id': { access: 'user', idOf: 'saved_search', body: { name: 'renamed' } },
  'delete /api/v1/saved_searches/:id': { access: 'user', idOf: 'saved_search' },
  'post /api/v1/workspaces': { access: 'user', body: { name: 'mine', description: 'd' } },
  'get /api/v1/workspaces': { access: 'user' },
  'get /api/v1/workspaces/:id': { access: 'user', idOf: 'workspace' },
  'patch /api/v1/workspaces/:id': { access: 'user', idOf: 'workspace', body: { description: 'renamed' } },
  'delete /api/v1/workspaces/:id': { access: 'user', idOf: 'workspace' },
  'post /api/v1/api_keys': { access: 'user', body: { name: 'ci' }, apiKeyRefused: true },
  'get /api/v1/api_keys': { access: 'user' },
  'get /api/v1/api_keys/:id': { access: 'user', idOf: 'api_key' },
  'delete /api/v1/api_keys/:id': { access: 'user', idOf: 'api_key', apiKeyRefused: true },

  'post /api/v1/billing/checkout-token': { access: 'user', body: { tier: 'PRO' }, apiKeyRefused: true },
  'post /api/v1/billing/checkout': { access: 'user', body: { tier: 'PRO' }, apiKeyRefused: true },
  'get /api/v1/billing/subscription': { access: 'user' },
  'get /api/v1/billing/credit-packs': { access: 'user' },
  'post /api/v1/billing/credit-packs/checkout': {
    access: 'user',
    body: { price_id: 'pri_pack_s' },
    apiKeyRefused: true,
  },
  'post /api/v1/billing/subscription/cancel': {
    access: 'user',
    body: { cancel_immediately: true },
    apiKeyRefused: true,
  },
  'post /api/v1/billing/subscription/change': {
    access: 'user',
    body: { target_tier: 'TEAM' },
    apiKeyRefused: true,
  },
  'post /api/v1/billing/subscription/resume': { access: 'user', body: {}, apiKeyRefused: true },
  'get /api/v1/credits': { access: 'user' },
  'post /api/v1/ai/completions': {
    access: 'user',
    body: { messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 16 },
  },

  'get /api/v1/admin/users': { access: 'admin', apiKeyRefused: true },
  'get /api/v1/admin/audit': { access: 'admin', apiKeyRefused: true },
  'post /api/v1/admin/broadcasts': {
    access: 'admin',
    apiKeyRefused: true,
    body: { template_key: 'welcome', audience: { tiers: ['TEAM'] }, bypass_consent: false },
  },
  'get /api/v1/admin/broadcasts': { access: 'admin', apiKeyRefused: true },
  'get /api/v1/admin/broadcasts/:id': { access: 'admin', apiKeyRefused: true, idOf: 'broadcast' },
  'get /api/v1/admin/email/suppressions': { access: 'admin', apiKeyRefused: true },
  'delete /api/v1/admin/email/suppressions/:email': { access: 'admin', apiKeyRefused: true },
  'get /api/v1/admin/metrics/overview': { access: 'admin', apiKeyRefused: true },
  'get /api/v1/admin/stats': { access: 'admin', apiKeyRefused: true },
  'get /api/v1/admin/webhooks': { access: 'admin', apiKeyRefused: true },
  'get /api/v1/admin/webhooks/:id': { access: 'admin', apiKeyRefused: true, idOf: 'webhook_event' },
  'post /api/v1/admin/webhooks/:id/replay': { access: 'admin', apiKeyRefused: true, idOf: 'webhook_event' },
  'post /api/v1/admin/webhooks/replay': { access: 'admin', apiKeyRefused: true, body: { status: 'FAILED' } },
  'post /api/v1/admin/queue-dashboard/session': { access: 'admin', apiKeyRefused: true },
};

export interface TableRoute extends DeclaredRoute, RouteCase {}

/**
 * The table joined with what the application declares, after checking that both list the same routes
 * and agree on how each is guarded (public marker, AdminGuard, and every @RefuseApiKeys route is listed
 * as apiKeyRefused).
 */
export function expectRouteTableMatches(app: INestApplication): TableRoute[] {
  expectCovers(app, Object.keys(ROUTE_TABLE));
  const routes = declaredRoutes(app).map((route) => ({ ...route, ...ROUTE_TABLE[route.key] }));
  for (const route of routes) {
    const guard = {
      route: route.key,
      public: route.isPublic,
      admin: route.adminOnly,
      unlistedKeyRefusal: route.refusesApiKeys && !route.apiKeyRefused,
    };
    expect(guard).toEqual({
      route: route.key,
      public: ['public', 'webhook', 'unsubscribe'].includes(route.access),
      admin: route.access === 'admin',
      unlistedKeyRefusal: false,
    });
  }
  return routes;
}

/** Ordered so that routes marked `last` (soft-deleting the caller) run after the others. */
export const inCallOrder = <T extends RouteCase>(routes: T[]): T[] =>
  [...routes].sort((a, b) => Number(Boolean(a.last)) - Number(Boolean(b.last)));

export interface CallOptions {
  auth?: string;
  params?: Record<string, string | undefined>;
  body?: unknown;
  query?: Record<string, string | string[] | undefined>;
  headers?: Record<string, string>;
}

/** One request to a table route through supertest. */
export function call(api: ApiApp, route: { method: string; path: string }, options: CallOptions = {}) {
  const method = route.method as 'get' | 'post' | 'patch' | 'put' | 'delete';
  let req = api.http[method](pathWith(route.path, options.params ?? {}));
  if (options.auth) req = req.set('Authorization', options.auth);
  for (const [name, value] of Object.entries(options.headers ?? {})) req = req.set(name, value);
  if (options.query) req = req.query(options.query);
  return options.body === undefined ? req : req.send(options.body as object);
}
