/**
 * Property-based fuzzing (fast-check) of every request input through HTTP against the real application:
 * every body DTO, every query DTO and named query parameter, every path id, the unsubscribe token and
 * both webhook receivers (unsigned garbage, and garbage correctly signed so it gets past verification).
 * Inputs are valid-ish or hostile: huge strings, unicode, NUL, lone surrogates, prototype keys, numbers
 * as strings, arrays for objects, extended-year dates, nested junk. Whatever arrives: never a 5xx,
 * every 4xx is problem+json, and the service is still ready afterwards.
 *
 * Routes covered: derived from the application (every route with a body DTO, query DTO, query
 * parameter, path parameter or raw webhook body); a test fails when a route takes input that no
 * property below generates. FUZZ_SEED and FUZZ_RUNS override the fixed seed and the runs per property.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc, { type Arbitrary } from 'fast-check';
import type { Response } from 'supertest';
import { checkoutToken, signatureFor } from '../support/billing.js';
import { grantCredits } from '../support/credits.js';
import { signEmailEvent } from '../support/email-webhook.js';
import { signIdentityEvent } from '../support/identity-webhook.js';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import {
  bodyFor,
  dateString,
  hostileKey,
  hostileString,
  hostileValue,
  queryFor,
} from './support/arbitraries.js';
import { inBatches } from './support/db.js';
import { call, expectRouteTableMatches, type IdKind, type TableRoute } from './support/route-table.js';
import { dtoProperties } from './support/routes.js';
import { archivedEvent, SecurityWorld } from './support/world.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const PROBLEM = /^application\/problem\+json/;
/** Generous per test: a property makes RUNS requests per route, and FUZZ_RUNS may be raised. */
const FUZZ_TIMEOUT = 30_000 + RUNS * 3_000;

/** Properties of different routes run side by side: the requests wait on I/O, not on CPU. */
const PARALLEL = 3;
const settings = (runs = RUNS) => ({ seed: SEED, numRuns: runs, endOnFailure: false });

/** Throws (so fast-check records the input) on a 5xx or an error that is not problem+json. */
function expectSane(label: string, res: Response): void {
  if (res.status >= 500) throw new Error(`${label} -> ${res.status} ${(res.text ?? '').slice(0, 300)}`);
  if (res.status >= 400 && !PROBLEM.test(res.headers['content-type'] ?? '')) {
    throw new Error(`${label} -> ${res.status} as ${res.headers['content-type']}`);
  }
}

/** A string usable in a URL path (encodeURIComponent refuses lone surrogates). */
const pathSafe = (value: string) => {
  try {
    encodeURIComponent(value);
    return value;
  } catch {
    return 'lone-surrogate';
  }
};

const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,120}$/);

describe('fuzzing every request input through HTTP: never a 5xx, the service stays healthy', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let userSub: string;
  let keyAuth: string;
  let adminAuth: string;
  let ownIds: Record<IdKind, string>;
  let tokenFor: () => string;
  let unsubscribeToken: string;
  const fuzzed = new Set<string>();

  beforeAll(async () => {
    world = await SecurityWorld.start();
    routes = expectRouteTableMatches(world.api.app);
    const { api } = world;
    const u = await world.user('fuzz');
    // PRO with credits: completions, owned creates and billing reach their services, not just the limits.
    await api.prisma.user.update({ where: { id: u.user.id }, data: { currentTier: 'PRO' } });
    await grantCredits(api, u.user.id, 100_000);
    userSub = u.sub;
    keyAuth = (await world.apiKey(u.auth, 'fuzz key')).auth;
    adminAuth = await world.admin();
    const own = async (path: string, body: object) =>
      (await api.http.post(path).set('Authorization', u.auth).send(body)).body.id as string;
    ownIds = {
      saved_search: await own('/api/v1/saved_searches', { name: 'fuzz', query: 'q' }),
      workspace: await own('/api/v1/workspaces', { name: 'fuzz' }),
      api_key: await own('/api/v1/api_keys', { name: 'fuzz' }),
      broadcast: (
        await api.http
          .post('/api/v1/admin/broadcasts')
          .set('Authorization', adminAuth)
          .send({ template_key: 'welcome', audience: { tiers: ['TEAM'] } })
      ).body.id,
      webhook_event: (await archivedEvent(api)).id,
    };
    tokenFor = () => checkoutToken(api, u.user, 'PRO');
    unsubscribeToken = api.app.get(UnsubscribeTokens).sign(u.user.id);
  });
  afterAll(() => world.close());

  // Tokens live 60 s and a long run (FUZZ_RUNS) outlasts them: mint one per property.
  const userJwt = () => world.bearer(userSub);
  const authFor = async (route: TableRoute, viaKey: boolean) => {
    if (route.access === 'admin') return (adminAuth = await world.admin());
    return viaKey ? keyAuth : userJwt();
  };
  const idArb = (route: TableRoute): Arbitrary<string> =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant(route.idOf ? ownIds[route.idOf] : randomUUID()) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 2, arbitrary: hostileString.map(pathSafe) },
    );

  it(
    'fuzzes every body DTO',
    async () => {
      await inBatches(
        routes.filter((r) => r.bodyDto),
        PARALLEL,
        async (route) => {
          fuzzed.add(`${route.key} body`);
          await fc.assert(
            fc.asyncProperty(
              bodyFor(route.bodyDto!),
              idArb(route),
              fc.boolean(),
              async (body, id, viaKey) => {
                const res = await call(world.api, route, {
                  auth: await authFor(route, viaKey),
                  params: { id },
                  headers: { 'Content-Type': 'application/json' },
                  body: JSON.stringify(body) ?? 'null',
                });
                expectSane(`${route.key} ${JSON.stringify(body)?.slice(0, 200)}`, res);
              },
            ),
            settings(),
          );
        },
      );
    },
    FUZZ_TIMEOUT,
  );

  it(
    'fuzzes every query DTO and named query parameter',
    async () => {
      await inBatches(
        routes.filter((r) => r.queryDto || r.queryParams.length),
        PARALLEL,
        async (route) => {
          fuzzed.add(`${route.key} query`);
          const names = [...(route.queryDto ? dtoProperties(route.queryDto) : []), ...route.queryParams];
          await fc.assert(
            fc.asyncProperty(queryFor(names), async (query) => {
              const res = await call(world.api, route, { auth: await authFor(route, false), query });
              expectSane(`${route.key} ?${JSON.stringify(query).slice(0, 200)}`, res);
            }),
            settings(),
          );
        },
      );
    },
    FUZZ_TIMEOUT,
  );

  it(
    'fuzzes every path id',
    async () => {
      await inBatches(
        routes.filter((r) => r.params.length),
        PARALLEL,
        async (route) => {
          fuzzed.add(`${route.key} params`);
          await fc.assert(
            fc.asyncProperty(idArb(route), async (id) => {
              const res = await call(world.api, route, {
                auth: await authFor(route, false),
                params: { id },
                body: route.body,
              });
              expectSane(`${route.key} id=${JSON.stringify(id).slice(0, 100)}`, res);
            }),
            settings(Math.ceil(RUNS / 2)),
          );
        },
      );
    },
    FUZZ_TIMEOUT,
  );

  it(
    'fuzzes the unsubscribe token, forged and mangled',
    async () => {
      const mangled = fc
        .tuple(fc.nat({ max: unsubscribeToken.length - 1 }), fc.string({ minLength: 1, maxLength: 3 }))
        .map(([at, s]) => `${unsubscribeToken.slice(0, at)}${s}${unsubscribeToken.slice(at + 1)}`);
      const t = fc.oneof(hostileString, mangled, fc.array(hostileString, { minLength: 2, maxLength: 3 }));
      for (const route of routes.filter((r) => r.access === 'unsubscribe')) {
        await fc.assert(
          fc.asyncProperty(t, headerValue, async (token, accept) => {
            const res = await call(world.api, route, {
              query: { t: token },
              headers: { Accept: accept || '*/*', 'Content-Type': 'application/x-www-form-urlencoded' },
              body: 'List-Unsubscribe=One-Click',
            });
            expectSane(`${route.key} t=${JSON.stringify(token).slice(0, 100)}`, res);
          }),
          settings(),
        );
      }
    },
    FUZZ_TIMEOUT,
  );

  it(
    'fuzzes both webhook receivers with unsigned garbage',
    async () => {
      const headerNames = fc.constantFrom(
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
        'svix-id',
        'svix-timestamp',
        'svix-signature',
        'paddle-signature',
        'content-type',
      );
      for (const route of routes.filter((r) => r.access === 'webhook')) {
        fuzzed.add(`${route.key} raw`);
        await fc.assert(
          fc.asyncProperty(
            fc.dictionary(headerNames, headerValue, { maxKeys: 5 }),
            fc.oneof(
              hostileValue.map((v) => JSON.stringify(v) ?? ''),
              hostileString,
            ),
            async (headers, body) => {
              const res = await call(world.api, route, {
                headers: { 'Content-Type': 'application/json', ...headers },
                body,
              });
              expectSane(`${route.key} ${JSON.stringify(headers)} ${body.slice(0, 100)}`, res);
              if (res.status < 300) throw new Error(`${route.key} accepted an unsigned body`);
            },
          ),
          settings(),
        );
      }
    },
    FUZZ_TIMEOUT,
  );

  it(
    'fuzzes the identity webhook with signed garbage',
    async () => {
      const identityId = fc.oneof(
        { weight: 3, arbitrary: fc.stringMatching(/^user_fuzz_[a-z0-9]{4}$/) },
        { weight: 1, arbitrary: hostileString },
      );
      const address = fc.oneof(
        { weight: 3, arbitrary: fc.emailAddress() },
        { weight: 1, arbitrary: hostileString },
      );
      const userData = fc.record(
        {
          id: identityId,
          email_addresses: fc.oneof(
            fc.array(fc.record({ id: fc.constantFrom('idn_1', 'idn_2'), email_address: address }), {
              maxLength: 3,
            }),
            hostileValue,
          ),
          primary_email_address_id: fc.oneof(fc.constantFrom('idn_1', 'idn_2', null), hostileValue),
          deleted: fc.oneof(fc.boolean(), hostileValue),
          unsafe_metadata: hostileValue,
        },
        { requiredKeys: ['id'] },
      );
      const event = fc.oneof(
        {
          weight: 6,
          arbitrary: fc.record(
            {
              type: fc.oneof(
                fc.constantFrom('user.created', 'user.updated', 'user.deleted', 'session.created'),
                hostileString,
              ),
              data: fc.oneof({ weight: 4, arbitrary: userData }, { weight: 1, arbitrary: hostileValue }),
              object: fc.oneof(fc.constant('event'), hostileValue),
              timestamp: fc.oneof(
                fc.integer({ min: 0 }),
                fc.constantFrom(8.64e15, 9e15, Number.MAX_SAFE_INTEGER),
                hostileValue,
              ),
            },
            { requiredKeys: ['type', 'data'] },
          ),
        },
        { weight: 1, arbitrary: hostileValue },
      );
      fuzzed.add('post /webhooks/identity signed');
      await fc.assert(
        fc.asyncProperty(
          event,
          fc.constantFrom<'webhook' | 'svix'>('webhook', 'svix'),
          async (payload, headerSet) => {
            const delivery = signIdentityEvent(JSON.stringify(payload) ?? 'null', { headerSet });
            const res = await world.api.http
              .post('/webhooks/identity')
              .set(delivery.headers)
              .send(delivery.body);
            expectSane(`identity ${delivery.body.slice(0, 300)}`, res);
          },
        ),
        settings(RUNS * 2),
      );
    },
    FUZZ_TIMEOUT,
  );

  it(
    'fuzzes the e-mail webhook with signed garbage',
    async () => {
      const data = fc.record(
        {
          email_id: fc.oneof(fc.uuid(), hostileValue),
          to: fc.oneof(fc.array(fc.oneof(fc.emailAddress(), hostileString), { maxLength: 3 }), hostileValue),
          bounce: fc.oneof(
            fc.record({
              type: fc.oneof(fc.constantFrom('Permanent', 'Transient', 'Undetermined'), hostileValue),
              subType: fc.oneof(fc.constantFrom('General', 'Suppressed'), hostileValue),
              message: hostileValue,
            }),
            hostileValue,
          ),
          tags: hostileValue,
        },
        { requiredKeys: ['email_id', 'to'] },
      );
      const event = fc.oneof(
        {
          weight: 6,
          arbitrary: fc.record(
            {
              type: fc.oneof(
                fc.constantFrom(
                  'email.bounced',
                  'email.complained',
                  'email.delivered',
                  'email.delivery_delayed',
                  'email.opened',
                ),
                hostileString,
              ),
              created_at: fc.oneof(
                fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
                hostileValue,
              ),
              data: fc.oneof({ weight: 4, arbitrary: data }, { weight: 1, arbitrary: hostileValue }),
            },
            { requiredKeys: ['type', 'data'] },
          ),
        },
        { weight: 1, arbitrary: hostileValue },
      );
      fuzzed.add('post /webhooks/email signed');
      await fc.assert(
        fc.asyncProperty(event, async (payload) => {
          const delivery = signEmailEvent(JSON.stringify(payload) ?? 'null');
          const res = await world.api.http.post('/webhooks/email').set(delivery.headers).send(delivery.body);
          expectSane(`email ${delivery.body.slice(0, 300)}`, res);
        }),
        settings(RUNS),
      );
    },
    FUZZ_TIMEOUT,
  );

  it(
    'fuzzes the billing webhook with signed garbage',
    async () => {
      const number = fc.oneof(fc.integer({ min: -2, max: 1000 }), hostileValue);
      const amount = fc.oneof(
        fc.integer({ min: -1_000_000, max: 10_000_000_000 }).map(String),
        hostileString,
      );
      const currency = fc.oneof(fc.constantFrom('USD', 'EUR', 'usd', 'XX'), hostileValue);
      const cycle = fc.oneof(
        fc.record({
          interval: fc.constantFrom('month', 'year', 'week', 'day', 'decade', ''),
          frequency: number,
        }),
        fc.constant(null),
        hostileValue,
      );
      const maybeDate = fc.oneof(dateString, fc.constant(null), hostileValue);
      const customData = fc.oneof(
        fc.constant(null),
        fc.record({
          checkout_token: fc.oneof(
            fc.constant('').map(() => tokenFor()),
            hostileString,
          ),
        }),
        hostileValue,
      );
      const ids = fc.oneof(
        { weight: 3, arbitrary: fc.stringMatching(/^(sub|txn|adj|ctm)_[a-z0-9]{6}$/) },
        { weight: 1, arbitrary: hostileString },
      );
      // Price ids stay configured ones: an unknown price is a deliberate 500 (retry until configured).
      const subscription = fc.record({
        id: ids,
        status: fc.oneof(
          fc.constantFrom('active', 'trialing', 'past_due', 'paused', 'canceled'),
          hostileValue,
        ),
        customer_id: fc.oneof(ids, fc.constant(null)),
        currency_code: currency,
        billing_cycle: cycle,
        items: fc.array(
          fc.record({
            quantity: number,
            price: fc.record({
              id: fc.constantFrom('pri_pro', 'pri_team'),
              unit_price: fc.oneof(fc.record({ amount, currency_code: currency }), fc.constant(null)),
              billing_cycle: cycle,
            }),
          }),
          { maxLength: 3 },
        ),
        current_billing_period: fc.oneof(
          fc.constant(null),
          fc.record({ starts_at: dateString, ends_at: dateString }),
        ),
        scheduled_change: fc.oneof(
          fc.constant(null),
          fc.record({
            action: fc.constantFrom('cancel', 'pause', 'resume'),
            effective_at: dateString,
            resume_at: maybeDate,
          }),
        ),
        canceled_at: maybeDate,
        paused_at: maybeDate,
        custom_data: customData,
      });
      const transaction = fc.record({
        id: ids,
        status: fc.oneof(fc.constantFrom('completed', 'paid', 'billed'), hostileString),
        customer_id: fc.oneof(ids, fc.constant(null)),
        subscription_id: fc.oneof(ids, fc.constant(null)),
        origin: fc.oneof(
          fc.constantFrom('web', 'subscription_recurring', 'subscription_update'),
          hostileValue,
        ),
        currency_code: currency,
        billed_at: maybeDate,
        items: fc.oneof(
          fc.array(
            fc.record({ price: fc.record({ id: fc.constantFrom('pri_pro', 'pri_team', 'pri_other') }) }),
          ),
          hostileValue,
        ),
        details: fc.oneof(
          fc.record({ totals: fc.record({ total: amount, currency_code: currency }) }),
          hostileValue,
        ),
        custom_data: customData,
      });
      const adjustment = fc.record({
        id: ids,
        action: fc.oneof(fc.constantFrom('refund', 'credit', 'chargeback'), hostileString),
        status: fc.oneof(fc.constantFrom('pending_approval', 'approved', 'rejected'), hostileString),
        transaction_id: fc.oneof(ids, fc.constant(null)),
        subscription_id: fc.oneof(ids, fc.constant(null)),
        customer_id: fc.oneof(ids, fc.constant(null)),
        currency_code: currency,
        totals: fc.oneof(fc.record({ total: amount, currency_code: currency }), hostileValue),
        created_at: maybeDate,
        updated_at: maybeDate,
      });
      const eventType = fc.oneof(
        {
          weight: 5,
          arbitrary: fc.constantFrom(
            'subscription.created',
            'subscription.updated',
            'subscription.activated',
            'subscription.resumed',
            'subscription.paused',
            'subscription.past_due',
            'subscription.canceled',
            'subscription.cancelled',
            'transaction.completed',
            'adjustment.created',
            'adjustment.updated',
            'customer.created',
          ),
        },
        { weight: 1, arbitrary: hostileString },
      );
      const envelope = fc.oneof(
        {
          weight: 8,
          arbitrary: fc.record(
            {
              event_id: fc.oneof(
                fc.uuid().map((u) => `evt_${u.replaceAll('-', '')}`),
                hostileString,
              ),
              event_type: eventType,
              occurred_at: maybeDate,
              notification_id: fc.oneof(fc.constant('ntf_1'), hostileValue),
              data: fc.oneof(subscription, transaction, adjustment, hostileValue),
            },
            { requiredKeys: ['event_id', 'event_type', 'data'] },
          ),
        },
        { weight: 1, arbitrary: hostileValue },
        { weight: 1, arbitrary: fc.dictionary(hostileKey, hostileValue) },
      );
      fuzzed.add('post /webhooks/billing signed');
      await fc.assert(
        fc.asyncProperty(envelope, async (payload) => {
          const raw = JSON.stringify(payload) ?? 'null';
          const res = await world.api.http
            .post('/webhooks/billing')
            .set('Content-Type', 'application/json')
            .set('Paddle-Signature', signatureFor(raw))
            .send(raw);
          expectSane(`billing ${raw.slice(0, 400)}`, res);
        }),
        settings(RUNS * 3),
      );
    },
    FUZZ_TIMEOUT,
  );

  it('answers 400 (never 500) to every input the fuzzer once turned into a 500', async () => {
    const { api } = world;
    const user = await userJwt();
    const admin = await world.admin();
    const own = ownIds.saved_search;
    const cases: [string, Promise<Response>][] = [
      ['me null locale', api.http.patch('/api/v1/me').set('Authorization', user).send({ locale: null })],
      [
        'me null consent',
        api.http.patch('/api/v1/me').set('Authorization', user).send({ marketing_consent_given: null }),
      ],
      [
        'feedback NUL message',
        api.http.post('/api/v1/feedback').set('Authorization', user).send({ message: 'a\u0000b' }),
      ],
      [
        'feedback NUL page',
        api.http.post('/api/v1/feedback').set('Authorization', user).send({ message: 'ok', page: '\u0000' }),
      ],
      [
        'filters lone surrogate',
        api.http
          .patch(`/api/v1/saved_searches/${own}`)
          .set('Authorization', user)
          .send({ filters: { id: '\ud800' } }),
      ],
      [
        'filters lone surrogate key',
        api.http
          .post('/api/v1/saved_searches')
          .set('Authorization', user)
          .send({ name: 'n', query: 'q', filters: { '\udfffx': 1 } }),
      ],
      [
        'admin users NUL search',
        api.http.get('/api/v1/admin/users').set('Authorization', admin).query({ search: 'a\u0000' }),
      ],
      [
        'admin audit NUL actor',
        api.http.get('/api/v1/admin/audit').set('Authorization', admin).query({ actor: 'x\u0000' }),
      ],
      [
        'admin audit signed year',
        api.http
          .get('/api/v1/admin/audit')
          .set('Authorization', admin)
          .query({ from: '-4714-01-01T00:00:00Z' }),
      ],
      [
        'admin audit huge page',
        api.http
          .get('/api/v1/admin/audit')
          .set('Authorization', admin)
          .query({ page: '99999999999999999999999' }),
      ],
      [
        'broadcast list huge page',
        api.http
          .get('/api/v1/admin/broadcasts')
          .set('Authorization', admin)
          .query({ page: '99999999999999999999999' }),
      ],
      [
        'broadcast signed year',
        api.http
          .post('/api/v1/admin/broadcasts')
          .set('Authorization', admin)
          .send({ template_key: 'welcome', audience: { signed_up_after: '-4714-01-01T00:00:00Z' } }),
      ],
    ];
    const identity = (payload: unknown) => {
      const delivery = signIdentityEvent(JSON.stringify(payload));
      return api.http.post('/webhooks/identity').set(delivery.headers).send(delivery.body);
    };
    const billing = (payload: unknown) => {
      const raw = JSON.stringify(payload);
      return api.http
        .post('/webhooks/billing')
        .set('Content-Type', 'application/json')
        .set('Paddle-Signature', signatureFor(raw))
        .send(raw);
    };
    const deep = JSON.parse(`${'['.repeat(200)}${']'.repeat(200)}`) as unknown;
    cases.push(
      [
        'identity timestamp past 9999',
        identity({ type: 'user.deleted', data: { id: 'user_fuzz_a00a' }, timestamp: 9e15 }),
      ],
      ['identity NUL', identity({ type: '\u0000', data: { id: 'user_fuzz_a0aa' } })],
      [
        'identity lone surrogate',
        identity({ type: 'user.created', data: { id: '\udfffx', email_addresses: [] } }),
      ],
      ['identity deep', identity({ type: 'user.created', data: { id: 'user_fuzz_deep', deep } })],
      ['billing NUL event id', billing({ event_id: '\u0000', event_type: 'x', data: {} })],
      [
        'billing lone surrogate',
        billing({ event_id: 'evt_s', event_type: 'adjustment.created', data: { currency_code: '\udfffx' } }),
      ],
      ['billing deep', billing({ event_id: 'evt_d', event_type: 'customer.created', data: deep })],
      [
        'billing year -13303',
        billing({
          event_id: `evt_${randomUUID().slice(0, 8)}`,
          event_type: 'customer.created',
          occurred_at: '-013303-10-02T00:22:48.699Z',
          data: {},
        }),
      ],
    );
    for (const [label, pending] of cases) {
      const res = await pending;
      expect({ label, status: res.status, type: res.headers['content-type'] }).toEqual({
        label,
        status: 400,
        type: expect.stringMatching(PROBLEM),
      });
    }
    // Headers over Node's limit never reach Express: still problem+json.
    const huge = await api.http.get('/health').set('X-Huge', 'h'.repeat(20_000));
    expect(huge.status).toBe(431);
    expect(huge.headers['content-type']).toMatch(PROBLEM);
    expect(huge.body).toMatchObject({ status: 431 });
  });

  it('covered every route that takes input, and the service is still ready', async () => {
    const webhook = (r: TableRoute) => r.access === 'webhook';
    const takesInput = routes.filter(
      (r) => r.bodyDto || r.queryDto || r.queryParams.length || r.params.length || webhook(r),
    );
    const missing = takesInput.filter(
      (r) =>
        (r.bodyDto && !fuzzed.has(`${r.key} body`)) ||
        ((r.queryDto || r.queryParams.length) && !fuzzed.has(`${r.key} query`)) ||
        (r.params.length && !fuzzed.has(`${r.key} params`)) ||
        (webhook(r) && !(r.rawRequest && fuzzed.has(`${r.key} raw`) && fuzzed.has(`${r.key} signed`))),
    );
    expect(missing.map((r) => r.key)).toEqual([]);
    const ready = await world.api.http.get('/health/ready');
    expect(ready.status).toBe(200);
    const me = await world.api.http.get('/api/v1/me').set('Authorization', await userJwt());
    expect(me.status).toBe(200);
  });
});
