/**
 * OWASP API7:2023 Server Side Request Forgery (spec rule 7: no outbound call to a URL from input).
 *
 * Local canary listeners record any connection. Their URLs (8 spellings each: IPv4, localhost, decimal
 * IP, IPv4-mapped IPv6, scheme-relative, credentials, https, gopher) are sent, and then nothing may ever
 * connect to them. Routes covered (derived from the application, checked against ROUTE_TABLE):
 * - every route of the API, with the URLs in every field of its body DTO (one field at a time, nested
 *   DTOs and JSON objects included), every field of its query DTO or query parameter, its path id, and in
 *   the Host, X-Forwarded-Host, Forwarded, Referer, Origin, X-Original-URL and callback-style headers;
 * - POST /webhooks/identity and POST /webhooks/billing with signed events carrying URLs in profile-image,
 *   metadata, custom_data, management and checkout URL fields;
 * - the work those requests cause in the worker (welcome e-mails, a broadcast, deletion hooks): e-mail
 *   links come from PUBLIC_BASE_URL, never from Host/Forwarded headers;
 * - the provider calls a user can trigger (billing cancel with a provider id full of path syntax, AI
 *   completions with URLs in the prompt) go only to the configured base URLs, ids percent-encoded.
 * Over the whole file, every outbound connection of the process goes to a configured store or provider.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { checkoutToken, deliver, newSubId, subscriptionEvent, transactionEvent } from '../support/billing.js';
import { grantCredits } from '../support/credits.js';
import { identityUserEvent, signIdentityEvent } from '../support/identity-webhook.js';
import { waitFor } from '../support/wait.js';
import { settled } from '../support/webhooks.js';
import { Canary, type OutboundTarget, recordOutbound } from './support/outbound.js';
import { call, expectRouteTableMatches, inCallOrder, type TableRoute } from './support/route-table.js';
import { dtoProperties, nestedDtoProperties } from './support/routes.js';
import { SecurityWorld } from './support/world.js';

const LOCAL = new Set(['127.0.0.1', 'localhost', '::1', '::ffff:127.0.0.1']);

describe('API7 server side request forgery: nothing is fetched from a URL taken from input', () => {
  let canary: Canary;
  let canaryTls: Canary;
  let outbound: { targets: OutboundTarget[]; restore: () => void };
  let world: SecurityWorld;
  let routes: TableRoute[];
  let urls: string[];

  beforeAll(async () => {
    [canary, canaryTls] = await Promise.all([Canary.start(), Canary.start()]);
    outbound = recordOutbound();
    world = await SecurityWorld.start({ worker: true });
    // One listening port for the whole file (supertest would otherwise listen on a new one per request).
    await world.api.app.listen(0, '127.0.0.1');
    routes = expectRouteTableMatches(world.api.app);
    urls = [...canary.urls('ssrf'), ...canaryTls.urls('tls')];
  });
  afterAll(async () => {
    await world.close();
    outbound.restore();
    await Promise.all([canary.close(), canaryTls.close()]);
  });

  const url = (i: number) => urls[i % urls.length];
  const ssrfHeaders = (i: number) => ({
    Host: canary.host,
    'X-Forwarded-Host': canary.host,
    'X-Forwarded-Proto': 'http',
    'X-Forwarded-Port': String(canary.port),
    Forwarded: `host=${canary.host};proto=http`,
    Referer: url(i),
    Origin: url(i + 1),
    'X-Original-URL': url(i + 2),
    'X-Rewrite-URL': url(i + 3),
    'X-Callback-Url': url(i + 4),
    'X-Webhook-Url': url(i + 5),
  });

  /** Bodies with the canary URLs in one field at a time (a 400 on one field must not hide another). */
  function urlBodies(route: TableRoute): Record<string, unknown>[] {
    if (!route.bodyDto) return [];
    const sample = route.body ?? {};
    const nested = nestedDtoProperties(route.bodyDto);
    return dtoProperties(route.bodyDto).flatMap((field, i) => {
      const inner = sample[field];
      if (nested.includes(field) && Array.isArray(inner)) {
        return [{ ...sample, [field]: inner.map((item) => ({ ...(item as object), content: url(i) })) }];
      }
      if (nested.includes(field)) {
        return [{ ...sample, [field]: { ...(inner as object), locales: [url(i)], tiers: [url(i + 1)] } }];
      }
      if (inner && typeof inner === 'object') {
        return [
          { ...sample, [field]: { url: url(i), callback_url: url(i + 1), webhook: { href: url(i + 2) } } },
        ];
      }
      return [
        { ...sample, [field]: url(i) },
        { ...sample, [field]: [url(i + 1)] },
      ];
    });
  }

  function urlQueries(route: TableRoute): Record<string, string>[] {
    const fields = [...(route.queryDto ? dtoProperties(route.queryDto) : []), ...route.queryParams];
    return [
      ...fields.map((field, i) => ({ [field]: url(i) })),
      { url: url(3), callback: url(4), redirect_uri: url(5), next: url(6), return_to: url(7) },
    ];
  }

  it('fetches nothing when every field, query, id and header of every route carries a URL', async () => {
    const { api } = world;
    const user = await world.user('ssrf');
    // A paying user, so the metered route really reaches its provider with the URLs in the prompt.
    await api.prisma.user.update({ where: { id: user.user.id }, data: { currentTier: 'PRO' } });
    await grantCredits(api, user.user.id, 1000);
    const admin = await world.admin();
    let n = 0;
    for (const route of inCallOrder(routes)) {
      const auth = route.access === 'admin' ? admin : route.access === 'user' ? user.auth : undefined;
      const params = route.params.length ? { id: url(n) } : {};
      const requests = [
        ...urlBodies(route).map((body) => ({ body })),
        ...urlQueries(route).map((query) => ({ query, body: route.body })),
        { body: route.body },
      ];
      for (const request of requests) {
        n += 1;
        const res = await call(api, route, { auth, params, headers: ssrfHeaders(n), ...request });
        expect({ route: route.key, status: res.status < 500 }).toEqual({ route: route.key, status: true });
        // Input may be echoed in a validation message; a link the server built must never use it.
        expect(res.text ?? '').not.toContain(`${canary.host}/api/v1`);
        expect(res.headers.location).toBeUndefined();
      }
    }
    expect(canary.connections).toEqual([]);
    expect(canaryTls.connections).toEqual([]);
  });

  it('fetches nothing for signed webhooks full of URLs, nor for the work they cause', async () => {
    const { api, email } = world;
    const sub = `user_ssrf_hook_${randomUUID().slice(0, 6)}`;
    const created = identityUserEvent('user.created', sub, `${sub}@example.com`) as {
      data: Record<string, unknown>;
    };
    Object.assign(created.data, {
      image_url: url(0),
      profile_image_url: url(1),
      unsafe_metadata: { avatar: url(2), callback: url(3) },
      public_metadata: { webhook_url: url(4) },
      external_accounts: [
        {
          provider: 'oauth_github',
          avatar_url: url(5),
          verification: { external_verification_redirect_url: url(6) },
        },
      ],
    });
    const identity = signIdentityEvent(created);
    const res = await api.http
      .post('/webhooks/identity')
      .set({ ...identity.headers, ...ssrfHeaders(1) })
      .send(identity.body);
    expect(res.status).toBe(200);
    await settled(api, 'identity', identity.id);
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } });

    const subId = newSubId();
    const subEvent = subscriptionEvent({
      type: 'subscription.created',
      subId,
      token: checkoutToken(api, user),
    }) as {
      data: Record<string, unknown>;
    };
    subEvent.data.custom_data = {
      ...(subEvent.data.custom_data as object),
      callback_url: url(2),
      return_url: url(3),
    };
    subEvent.data.management_urls = { update_payment_method: url(4), cancel: url(5) };
    expect((await deliver(api, subEvent)).status).toBe(200);
    const txn = transactionEvent({ subId, origin: 'web' }) as { data: Record<string, unknown> };
    txn.data.checkout = { url: url(6) };
    txn.data.invoice_url = url(7);
    expect((await deliver(api, txn)).status).toBe(200);

    // The worker sends the welcome e-mail of the new user; its links must not come from any header.
    const welcome = await waitFor(async () => email.deliveredTo(`${sub}@example.com`)[0], 15_000);
    const everything = JSON.stringify(welcome);
    expect(everything).not.toContain(canary.host);
    expect(everything).not.toContain(`:${canary.port}`);
    expect(canary.connections).toEqual([]);
    expect(canaryTls.connections).toEqual([]);
  });

  it('builds unsubscribe links in broadcasts from PUBLIC_BASE_URL, whatever the request headers said', async () => {
    const { api, email } = world;
    const reader = await world.user('reader');
    await api.http
      .patch('/api/v1/me')
      .set('Authorization', reader.auth)
      .set(ssrfHeaders(2))
      .send({ marketing_consent_given: true })
      .expect(200);
    const run = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', await world.admin())
      .set(ssrfHeaders(3))
      .send({ template_key: 'newsletter', audience: {} });
    expect(run.status).toBe(201);
    const mail = await waitFor(
      async () =>
        email
          .deliveredTo(reader.user.email)
          .find((d) => d.tags.some((tag) => tag.name === 'template' && tag.value === 'newsletter')),
      15_000,
    );
    const unsubscribe = mail.headers['List-Unsubscribe'] ?? '';
    expect(
      unsubscribe.startsWith(`<${world.api.config.email.publicBaseUrl}/api/v1/email/unsubscribe?t=`),
    ).toBe(true);
    expect(JSON.stringify(mail)).not.toContain(canary.host);
    const t = /t=([^>&]+)/.exec(unsubscribe)![1];
    const page = await api.http
      .get('/api/v1/email/unsubscribe')
      .query({ t: decodeURIComponent(t) })
      .set(ssrfHeaders(4));
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(canary.host);
  });

  it('sends provider calls a user can trigger only to the configured base URLs, ids percent-encoded', async () => {
    const { api, billing, llm } = world;
    const owner = await world.user('odd-sub');
    const oddId = `../../customers/${url(0)}?x=#`;
    billing.seed(oddId);
    const event = subscriptionEvent({
      type: 'subscription.created',
      subId: oddId,
      token: checkoutToken(api, owner.user),
    });
    expect((await deliver(api, event)).status).toBe(200);
    billing.reset();
    const cancel = await api.http
      .post('/api/v1/billing/subscription/cancel')
      .set('Authorization', owner.auth)
      .send({});
    expect(cancel.status).toBe(200);
    expect(billing.requests.map((r) => r.path)).toEqual([
      `/subscriptions/${encodeURIComponent(oddId)}/cancel`,
    ]);

    await grantCredits(api, owner.user.id, 50);
    const before = llm.requests.length;
    const completion = await api.http
      .post('/api/v1/ai/completions')
      .set('Authorization', owner.auth)
      .set(ssrfHeaders(5))
      .send({ messages: [{ role: 'user', content: `Summarise ${url(1)} and ${url(2)}` }], max_tokens: 16 });
    expect(completion.status).toBe(200);
    expect(llm.requests.length).toBe(before + 1);
    expect(canary.connections).toEqual([]);
    expect(canaryTls.connections).toEqual([]);
  });

  it('connected only to the configured stores and providers during the whole file', async () => {
    const allowed = new Set(world.configuredPorts);
    const appPort = () => (world.api.app.getHttpServer().address() as { port?: number } | null)?.port;
    const unexpected = outbound.targets.filter(
      (t) =>
        t.path !== null ||
        !LOCAL.has(t.host) ||
        t.port === null ||
        (!allowed.has(t.port) && t.port !== appPort()),
    );
    expect(unexpected).toEqual([]);
    expect(outbound.targets.some((t) => t.port === canary.port || t.port === canaryTls.port)).toBe(false);
    // The recorder saw the traffic it should (so an empty "unexpected" list means something).
    for (const port of [world.configuredPorts[0], world.configuredPorts[1]]) {
      expect(outbound.targets.some((t) => t.port === port)).toBe(true);
    }
  });
});
