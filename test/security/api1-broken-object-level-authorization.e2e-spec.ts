/**
 * OWASP API1:2023 Broken Object Level Authorization.
 *
 * Routes covered (derived from the application, checked against ROUTE_TABLE):
 * - every route with an id in its path, called by a second user with the first user's ids, by JWT and by
 *   API key, must answer exactly like a missing id: GET/PATCH/DELETE /api/v1/saved_searches/:id,
 *   GET/PATCH/DELETE /api/v1/workspaces/:id, GET/DELETE /api/v1/api_keys/:id, GET
 *   /api/v1/admin/broadcasts/:id (admin-scoped: a non-admin gets the same 403 for any id);
 * - every other `user` route (/me, /account/me/*, /feedback, owned lists and creates, /billing/*,
 *   /credits, /ai/completions) called by the second user must neither show nor change anything of the
 *   first user's, and must not act on the first user's subscription at the billing provider;
 * - POST /api/v1/ai/completions: an Idempotency-Key already used by another user never replays that
 *   user's answer;
 * - GET/POST /api/v1/email/unsubscribe: the token names its user; another user's id in it is refused.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { type SeededUser, seedUserWithEverything } from '../factories/user-data.factory.js';
import { grantCredits } from '../support/credits.js';
import {
  call,
  expectRouteTableMatches,
  type IdKind,
  inCallOrder,
  type TableRoute,
} from './support/route-table.js';
import { archivedEvent, SecurityWorld } from './support/world.js';

const stripRequestId = (res: Response) => {
  const { request_id: _id, ...body } = res.body as Record<string, unknown>;
  return { status: res.status, body };
};

describe('API1 broken object level authorization: a second user never reaches the first one’s objects', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let alice: SeededUser;
  let aliceAuth: () => Promise<string>;
  let ids: Record<IdKind, string>;
  let markers: string[];
  let mallory: { auth: string; key: string; userId: string };

  beforeAll(async () => {
    world = await SecurityWorld.start();
    const { api } = world;
    routes = expectRouteTableMatches(api.app);
    alice = await seedUserWithEverything(api.prisma, `user_alice_${randomUUID().slice(0, 6)}`);
    await api.prisma.user.update({
      where: { id: alice.user.id },
      // Verified like a real sign-in makes it (her own token's email_verified claim would set it mid-test).
      data: { marketingConsentGiven: true, utmSource: 'alice-utm-marker', locale: 'de', emailVerified: true },
    });
    aliceAuth = () => api.bearer(alice.user.identityUserId, alice.user.email);
    const broadcast = await api.http
      .post('/api/v1/admin/broadcasts')
      .set('Authorization', await world.admin())
      .send({ template_key: 'welcome', audience: { tiers: ['TEAM'] } });
    expect(broadcast.status).toBe(201);
    ids = {
      saved_search: alice.ids.saved_searches,
      workspace: alice.ids.workspaces,
      api_key: alice.ids.api_keys,
      broadcast: broadcast.body.id,
      webhook_event: (await archivedEvent(api)).id,
    };
    const [search, workspace, key, subscription] = await Promise.all([
      api.prisma.savedSearch.findUniqueOrThrow({ where: { id: ids.saved_search } }),
      api.prisma.workspace.findUniqueOrThrow({ where: { id: ids.workspace } }),
      api.prisma.apiKey.findUniqueOrThrow({ where: { id: ids.api_key } }),
      api.prisma.subscription.findUniqueOrThrow({ where: { id: alice.ids.subscriptions } }),
    ]);
    world.billing.seed(subscription.providerSubscriptionId);
    markers = [
      alice.user.id,
      alice.user.identityUserId,
      alice.user.email,
      'alice-utm-marker',
      search.name,
      workspace.name,
      key.prefix,
      subscription.providerSubscriptionId,
      ...Object.entries(alice.ids)
        .filter(([table]) => table !== 'broadcast_runs')
        .map(([, id]) => id),
    ];
    const m = await world.user('mallory');
    mallory = { auth: m.auth, key: (await world.apiKey(m.auth)).auth, userId: m.user.id };
  });
  afterAll(() => world.close());

  /** Everything of Alice's a route could leak or change (last_active_at is the guard's own marker). */
  async function aliceState() {
    const { prisma } = world.api;
    const where = { userId: alice.user.id };
    const orderBy = { id: 'asc' } as const;
    const user = await prisma.user.findUniqueOrThrow({ where: { id: alice.user.id } });
    return {
      user: { ...user, lastActiveAt: null },
      subscriptions: await prisma.subscription.findMany({ where, orderBy }),
      credits: await prisma.creditTransaction.findMany({ where, orderBy }),
      savedSearches: await prisma.savedSearch.findMany({ where, orderBy }),
      workspaces: await prisma.workspace.findMany({ where, orderBy }),
      apiKeys: (await prisma.apiKey.findMany({ where, orderBy })).map((k) => ({ ...k, lastUsedAt: null })),
      feedback: await prisma.feedback.findMany({ where, orderBy }),
      consent: await prisma.emailConsentEvent.findMany({ where, orderBy }),
      audit: await prisma.auditLog.count({ where: { userId: alice.user.identityUserId } }),
    };
  }

  const expectNoMarkers = (route: string, res: Response) => {
    const text = res.text ?? JSON.stringify(res.body);
    const leaked = markers.filter((marker) => text.includes(marker));
    expect({ route, status: res.status, leaked }).toEqual({ route, status: res.status, leaked: [] });
    expect(res.status).toBeLessThan(500);
  };

  it('classifies every id route by the object it names', () => {
    const idRoutes = routes.filter((r) => r.params.includes('id'));
    expect(idRoutes.length).toBeGreaterThanOrEqual(9);
    for (const route of idRoutes)
      expect({ route: route.key, idOf: route.idOf }).toEqual({
        route: route.key,
        idOf: expect.any(String),
      });
    // A route keyed by something else (the suppression list by address) names no user's object: admin only.
    const otherKeys = routes.filter((r) => r.params.length > 0 && !r.params.includes('id'));
    for (const route of otherKeys)
      expect({ route: route.key, access: route.access }).toEqual({ route: route.key, access: 'admin' });
  });

  it('answers another user’s id exactly like a missing id on every id route (JWT and API key)', async () => {
    const before = await aliceState();
    for (const route of routes.filter((r) => r.idOf)) {
      // The id is real: its owner (or an admin, for admin objects) reads it.
      const ownerAuth = route.access === 'admin' ? await world.admin() : await aliceAuth();
      const owned = await call(
        world.api,
        // Read through the object's own GET route (an action such as /replay is not a read).
        { method: 'get', path: route.path.replace(/\/replay$/, '') },
        { auth: ownerAuth, params: { id: ids[route.idOf!] } },
      );
      expect({ route: route.key, owner: owned.status }).toEqual({ route: route.key, owner: 200 });

      for (const [via, auth] of [
        ['jwt', mallory.auth],
        ['api_key', mallory.key],
      ] as const) {
        const foreign = await call(world.api, route, {
          auth,
          params: { id: ids[route.idOf!] },
          body: route.body,
        });
        const missing = await call(world.api, route, {
          auth,
          params: { id: randomUUID() },
          body: route.body,
        });
        expect({ route: route.key, via, ...stripRequestId(foreign) }).toEqual({
          route: route.key,
          via,
          ...stripRequestId(missing),
        });
        expect([403, 404]).toContain(foreign.status);
        expectNoMarkers(route.key, foreign);
      }
    }
    expect(await aliceState()).toEqual(before);
  });

  it('shows and changes nothing of the first user on any user route (API key, then JWT)', async () => {
    const before = await aliceState();
    const userRoutes = inCallOrder(routes.filter((r) => r.access === 'user'));
    expect(userRoutes.length).toBeGreaterThanOrEqual(29);
    for (const [via, auth] of [
      ['api_key', mallory.key],
      ['jwt', mallory.auth],
    ] as const) {
      for (const route of userRoutes) {
        if (route.last && via === 'api_key') continue;
        const params = route.idOf ? { id: ids[route.idOf] } : {};
        const res = await call(world.api, route, { auth, params, body: route.body });
        expectNoMarkers(`${via} ${route.key}`, res);
      }
    }
    expect(await aliceState()).toEqual(before);
    const touched = world.billing.requests.filter((r) => markers.some((m) => r.path.includes(m)));
    expect(touched).toEqual([]);
    // Mallory's own calls did land on Mallory (the loop was not refused wholesale).
    const malloryRow = await world.api.prisma.user.findUniqueOrThrow({ where: { id: mallory.userId } });
    expect(malloryRow).toMatchObject({ locale: 'fr', utmSource: 'newsletter' });
    expect(malloryRow.deletedAt).not.toBeNull();
  });

  it('never replays another user’s completion for the same Idempotency-Key', async () => {
    const { api, llm } = world;
    await grantCredits(api, alice.user.id, 100);
    const eve = await world.user('eve');
    await grantCredits(api, eve.user.id, 100);
    const body = { messages: [{ role: 'user', content: 'What is my secret?' }], max_tokens: 16 };
    const key = `shared-${randomUUID()}`;
    llm.behaviour = { kind: 'ok', content: 'alice-private-answer' };
    const first = await api.http
      .post('/api/v1/ai/completions')
      .set('Authorization', await aliceAuth())
      .set('Idempotency-Key', key)
      .send(body);
    expect(first.status).toBe(200);
    llm.behaviour = { kind: 'ok', content: 'eve-own-answer' };
    const second = await api.http
      .post('/api/v1/ai/completions')
      .set('Authorization', eve.auth)
      .set('Idempotency-Key', key)
      .send(body);
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.body.content).toBe('eve-own-answer');
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.text).not.toContain(alice.user.id);
    llm.behaviour = { kind: 'ok' };
  });

  it('refuses an unsubscribe token whose user id was swapped for another user’s', async () => {
    const { api } = world;
    const tokens = api.app.get(UnsubscribeTokens);
    const eve = await world.user('eve-unsub');
    await api.prisma.user.update({ where: { id: eve.user.id }, data: { marketingConsentGiven: true } });
    const [, mac] = tokens.sign(eve.user.id).split('.');
    const swapped = `${Buffer.from(JSON.stringify({ u: alice.user.id, p: 'marketing' })).toString('base64url')}.${mac}`;
    for (const method of ['get', 'post'] as const) {
      const res = await api.http[method]('/api/v1/email/unsubscribe').query({ t: swapped });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_unsubscribe_token' });
    }
    // Eve's own token unsubscribes Eve, and only Eve.
    const own = await api.http.post('/api/v1/email/unsubscribe').query({ t: tokens.sign(eve.user.id) });
    expect(own.status).toBe(200);
    const [eveRow, aliceRow] = await Promise.all([
      api.prisma.user.findUniqueOrThrow({ where: { id: eve.user.id } }),
      api.prisma.user.findUniqueOrThrow({ where: { id: alice.user.id } }),
    ]);
    expect(eveRow.marketingConsentGiven).toBe(false);
    expect(aliceRow.marketingConsentGiven).toBe(true);
  });
});
