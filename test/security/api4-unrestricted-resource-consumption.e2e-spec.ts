/**
 * OWASP API4:2023 Unrestricted Resource Consumption.
 *
 * Routes covered (derived from the application, checked against ROUTE_TABLE):
 * - every route that reads a body (all POST/PATCH routes, webhooks and the form-encoded unsubscribe
 *   included): over the size limit -> 413 problem+json, before authentication;
 * - every route with a body DTO: JSON nested 10,000 levels deep -> 400 (no stack overflow), every
 *   top-level field refuses a 300,000-character string and a 5,000-element array;
 * - every list route (owned lists, /credits, admin users/audit/broadcasts): a huge `page_size` is either
 *   normalised to at most 200 rows or refused with 400, a huge `page` is served without a 5xx;
 * - POST /api/v1/saved_searches, /workspaces, /api_keys: bounded per user by the tier limits (409);
 * - POST /api/v1/ai/completions: per-user rate limit (429 with Retry-After and RateLimit-* headers),
 *   refused calls cost nothing, other users are unaffected;
 * - oversized URLs, headers and query-parameter floods on every route: never a 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { takesLargeBody } from '../../src/common/http/body-limits.js';
import { MAX_FIELD_ERRORS } from '../../src/common/errors/app-error.js';
import { EMAIL_LINK_LIMIT } from '../../src/config/env.js';
import { RequestRateLimiter } from '../../src/modules/auth/request-rate-limit.js';
import { UnsubscribeTokens } from '../../src/modules/email/unsubscribe-tokens.js';
import { grantCredits } from '../support/credits.js';
import { waitFor } from '../support/wait.js';
import { inBatches } from './support/db.js';
import { call, expectRouteTableMatches, type TableRoute } from './support/route-table.js';
import { dtoProperties } from './support/routes.js';
import { SecurityWorld } from './support/world.js';

const PROBLEM = /^application\/problem\+json/;

describe('API4 unrestricted resource consumption', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];
  let auth: string;

  beforeAll(async () => {
    world = await SecurityWorld.start();
    routes = expectRouteTableMatches(world.api.app);
    auth = (await world.user('consumer')).auth;
  });
  afterAll(() => world.close());

  const authFor = async (route: TableRoute) => (route.access === 'admin' ? world.admin() : auth);
  const sampleParams = (route: TableRoute) =>
    route.params.length ? { id: '6f1c1f0e-8a53-4c9b-9d1e-3b5c2a7e4d10' } : {};

  it('refuses oversized bodies on every route that reads one, before authentication', async () => {
    const bodyRoutes = routes.filter(
      (r) => r.method === 'post' || r.method === 'patch' || r.method === 'put',
    );
    expect(bodyRoutes.length).toBeGreaterThanOrEqual(19);
    const json = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 16) });
    const form = `List-Unsubscribe=One-Click&pad=${'x'.repeat(70 * 1024)}`;
    for (const route of bodyRoutes) {
      const asJson = await call(world.api, route, {
        params: sampleParams(route),
        headers: { 'Content-Type': 'application/json' },
        body: json,
      });
      expect({ route: route.key, status: asJson.status }).toEqual({ route: route.key, status: 413 });
      expect(asJson.headers['content-type']).toMatch(PROBLEM);
      expect(asJson.body).toMatchObject({ status: 413, code: 'payload_too_large' });
      const asForm = await call(world.api, route, {
        params: sampleParams(route),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: form,
      });
      // A form is read only where one is documented (and by the webhook receivers, whose bytes are
      // signed); a JSON route refuses it for its media type before reading it.
      const readsForm = route.access === 'unsubscribe' || route.access === 'webhook';
      expect({ route: route.key, status: asForm.status }).toEqual({
        route: route.key,
        status: readsForm ? 413 : 415,
      });
    }
  });

  it('refuses JSON nested thousands of levels deep on every body DTO route with a 400', async () => {
    // Sent as text: a client-side serializer would overflow its own stack on these.
    // 10,000 levels: deep enough to overflow a recursive walk, small enough for the 64 KB body limit.
    const deepArray = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const deepObject = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    for (const route of routes.filter((r) => r.bodyDto)) {
      const field = Object.keys(route.body ?? {})[0] ?? dtoProperties(route.bodyDto!)[0];
      for (const deep of [deepArray, deepObject]) {
        const res = await call(world.api, route, {
          auth: await authFor(route),
          params: sampleParams(route),
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ ...route.body, [field]: '__deep__' }).replace('"__deep__"', deep),
        });
        expect({ route: route.key, status: res.status }).toEqual({ route: route.key, status: 400 });
        expect(res.headers['content-type']).toMatch(PROBLEM);
      }
    }
  });

  it('bounds the length of every string and array field of every body DTO', async () => {
    const failures: string[] = [];
    const many = Array.from({ length: 5_000 }, () => 'PRO');
    for (const route of routes.filter((r) => r.bodyDto)) {
      // Under each route's body limit (64 KB, 1 MB on the large routes), so the field bound answers.
      const huge = 'y'.repeat(takesLargeBody(`/${route.path.replace(/^\//, '')}`) ? 300_000 : 50_000);
      const fields = dtoProperties(route.bodyDto!);
      const attempts = fields.flatMap((field) => [
        { field, kind: 'string', body: { ...route.body, [field]: huge } },
        { field, kind: 'array', body: { ...route.body, [field]: many } },
      ]);
      const a = await authFor(route);
      const results = await inBatches(attempts, 6, async (attempt) => ({
        ...attempt,
        status: (await call(world.api, route, { auth: a, params: sampleParams(route), body: attempt.body }))
          .status,
      }));
      for (const r of results)
        if (r.status !== 400) failures.push(`${route.key} ${r.field} ${r.kind} -> ${r.status}`);
    }
    expect(failures).toEqual([]);
  });

  it('normalises or refuses huge page sizes on every list route', async () => {
    const lists = routes.filter((r) => r.queryDto && dtoProperties(r.queryDto).includes('page_size'));
    expect(lists.map((r) => r.key).sort()).toEqual([
      'get /api/v1/admin/audit',
      'get /api/v1/admin/broadcasts',
      'get /api/v1/admin/email/suppressions',
      'get /api/v1/admin/users',
      'get /api/v1/admin/webhooks',
      'get /api/v1/api_keys',
      'get /api/v1/credits',
      'get /api/v1/saved_searches',
      'get /api/v1/workspaces',
    ]);
    for (const route of lists) {
      const queries: Record<string, string | string[]>[] = [
        { page_size: '1000000' },
        { page_size: '201' },
        { page_size: '99999999999999999999999' },
        { page: '1000000000000', page_size: '200' },
        { page_size: ['1', '100000'] },
      ];
      for (const query of queries) {
        const res = await call(world.api, route, { auth: await authFor(route), query });
        const ok =
          res.status === 400 ||
          (res.status === 200 && res.body.page_size <= 200 && res.body.items.length <= res.body.page_size);
        expect({ route: route.key, query, status: res.status, ok }).toEqual({
          route: route.key,
          query,
          status: res.status,
          ok: true,
        });
      }
    }
  });

  it('bounds every owned collection per user by the tier limit', async () => {
    const creates = routes.filter(
      (r) =>
        r.method === 'post' &&
        routes.some((o) => o.idOf && o.path === `${r.path}/:id` && o.access === 'user'),
    );
    expect(creates.map((r) => r.key).sort()).toEqual([
      'post /api/v1/api_keys',
      'post /api/v1/saved_searches',
      'post /api/v1/workspaces',
    ]);
    const limits = world.api.config.project.tiers.FREE.limits;
    const expected: Record<string, number> = {
      'post /api/v1/api_keys': limits.apiKeys,
      'post /api/v1/saved_searches': limits.savedSearches,
      'post /api/v1/workspaces': limits.workspaces,
    };
    for (const route of creates) {
      const owner = (await world.user('collector')).auth;
      let created = 0;
      let last;
      for (let i = 0; i <= expected[route.key]; i += 1) {
        last = await call(world.api, route, { auth: owner, body: route.body });
        if (last.status !== 201) break;
        created += 1;
      }
      expect({ route: route.key, created, status: last?.status, code: last?.body.code }).toEqual({
        route: route.key,
        created: expected[route.key],
        status: 409,
        code: 'limit_reached',
      });
    }
  });

  it('rate limits metered completions per user, charges nothing for refused calls and spares others', async () => {
    const { api } = world;
    const spender = await world.user('spender');
    await grantCredits(api, spender.user.id, 1000);
    const perMinute = api.config.project.tiers.FREE.limits.aiRequestsPerMinute;
    const body = routes.find((r) => r.key === 'post /api/v1/ai/completions')!.body!;
    const statuses: number[] = [];
    let refused;
    for (let i = 0; i < perMinute + 2; i += 1) {
      const res = await api.http.post('/api/v1/ai/completions').set('Authorization', spender.auth).send(body);
      statuses.push(res.status);
      if (res.status === 429) refused = res;
    }
    expect(statuses).toEqual([...Array(perMinute).fill(200), 429, 429]);
    expect(refused!.headers['retry-after']).toMatch(/^\d+$/);
    expect(refused!.headers['ratelimit-remaining']).toBe('0');
    expect(refused!.headers['content-type']).toMatch(PROBLEM);
    const spends = await api.prisma.creditTransaction.count({
      where: { userId: spender.user.id, kind: 'spend' },
    });
    expect(spends).toBe(perMinute);
    const bystander = await world.user('bystander');
    await grantCredits(api, bystander.user.id, 10);
    expect(
      (await api.http.post('/api/v1/ai/completions').set('Authorization', bystander.auth).send(body)).status,
    ).toBe(200);
  });

  it('survives oversized URLs, headers and query-parameter floods on every route without a 5xx', async () => {
    const flood = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`p${i}`, '1']));
    const failures: string[] = [];
    for (const route of routes) {
      const a = route.access === 'user' || route.access === 'admin' ? await authFor(route) : undefined;
      const attempts = [
        call(world.api, route, { auth: a, params: sampleParams(route), query: flood }),
        call(world.api, route, { auth: a, params: sampleParams(route), query: { q: 'z'.repeat(20_000) } }),
        call(world.api, route, {
          auth: a,
          params: sampleParams(route),
          headers: { 'X-Big': 'h'.repeat(20_000) },
        }),
      ];
      for (const res of await Promise.all(attempts)) {
        if (res.status >= 500) failures.push(`${route.key} -> ${res.status}`);
      }
    }
    expect(failures).toEqual([]);
    expect((await world.api.http.get('/health/ready')).status).toBe(200);
  });
});

/** Issue 14 item 2: no request freezes the process; general rate limits. */
describe('API4 key-count bound, capped validation errors and the general rate limits', () => {
  let world: SecurityWorld;
  let routes: TableRoute[];

  beforeAll(async () => {
    world = await SecurityWorld.start();
    routes = expectRouteTableMatches(world.api.app);
  });
  afterAll(() => world.close());

  /** 70,000 keys in about 740 KB: under the 1 MB of the completions route, 4 s in class-transformer. */
  const manyKeys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":${i % 10}`).join(',')}}`;

  it('refuses a 740 KB body of 70,000 keys with 413 before authentication and transformation', async () => {
    const body = manyKeys(70_000);
    expect(body.length).toBeGreaterThan(700_000);
    expect(body.length).toBeLessThan(world.api.config.limits.largeBodyBytes);
    const auth = (await world.user('keys')).auth;
    for (const headers of [{}, { Authorization: auth }]) {
      const res = await world.api.http
        .post('/api/v1/ai/completions')
        .set({ ...headers, 'Content-Type': 'application/json' })
        .send(body);
      expect(res.status).toBe(413);
      expect(res.headers['content-type']).toMatch(PROBLEM);
      expect(res.body).toMatchObject({ status: 413, code: 'payload_too_large' });
      expect(res.body.detail).toMatch(/more than 1000 keys/);
      expect(res.text.length).toBeLessThan(2_000);
      expect(res.headers['x-request-id']).toBeTruthy();
    }
    const spends = await world.api.prisma.creditTransaction.count();
    expect(spends).toBe(0);
  });

  it('bounds the total of keys and values and the keys of one object on every small-body route', async () => {
    const bodyRoutes = routes.filter((r) => r.bodyDto && !takesLargeBody(`/${r.path.replace(/^\//, '')}`));
    expect(bodyRoutes.length).toBeGreaterThan(5);
    const admin = await world.admin();
    const user = (await world.user('nodes')).auth;
    // 12,000 array elements (24 KB) and 1,500 keys (about 15 KB): both under 64 KB.
    const wideArray = JSON.stringify({ tags: Array.from({ length: 12_000 }, () => 0) });
    const wideObject = manyKeys(1_500);
    for (const route of bodyRoutes) {
      for (const [body, detail] of [
        [wideArray, /more than 10000 keys and values/],
        [wideObject, /more than 1000 keys/],
      ] as const) {
        const res = await call(world.api, route, {
          auth: route.access === 'admin' ? admin : user,
          params: route.params.length ? { id: randomUUID() } : {},
          headers: { 'Content-Type': 'application/json' },
          body,
        });
        expect({ route: route.key, status: res.status }).toEqual({ route: route.key, status: 413 });
        expect(res.body.detail).toMatch(detail);
      }
    }
  });

  it('caps errors[] of a validation problem and says how many there were', async () => {
    const auth = (await world.user('errors')).auth;
    const body = Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`unknown_${i}`, i]));
    const res = await world.api.http.post('/api/v1/feedback').set('Authorization', auth).send(body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.body.errors).toHaveLength(MAX_FIELD_ERRORS);
    expect(res.body.errors_total).toBeGreaterThanOrEqual(900);
    expect(res.body.detail).toMatch(/and \d+ more$/);
    expect(res.text.length).toBeLessThan(5_000);
  });

  describe('with small limits', () => {
    let limited: Awaited<ReturnType<TestEnvLike['startApi']>>;
    type TestEnvLike = SecurityWorld['env'];
    const from = (ip: string) => ({ 'X-Forwarded-For': ip });

    beforeAll(async () => {
      limited = await world.env.startApi({
        config: world.env.configWith({
          RATE_LIMIT_WRITES_PER_MINUTE: '3',
          RATE_LIMIT_PUBLIC_PER_MINUTE: '4',
          ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR: '2',
          TRUST_PROXY_HOPS: '1',
        }),
      });
    });

    const expect429 = (res: { status: number; headers: Record<string, string>; body: { code?: string } }) => {
      expect(res.status).toBe(429);
      expect(res.headers['content-type']).toMatch(PROBLEM);
      expect(res.body.code).toBe('rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.headers['x-request-id']).toBeTruthy();
    };

    it('limits a burst of writes below the minute limit (DESIGN: 120 a minute, bursts of 30)', async () => {
      const burst = await world.env.startApi({
        config: world.env.configWith({ RATE_LIMIT_WRITES_PER_MINUTE: '120', RATE_LIMIT_WRITES_BURST: '4' }),
      });
      const writer = await world.user('burster');
      const statuses: number[] = [];
      for (let i = 0; i < 6; i += 1) {
        const res = await burst.http
          .post('/api/v1/feedback')
          .set('Authorization', writer.auth)
          .send({ message: `b ${i}` });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([201, 201, 201, 201, 429, 429]);
    });

    it('limits authenticated writes per user, not reads, and spares other users', async () => {
      const writer = await world.user('writer');
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 5; i += 1) {
        last = await limited.http
          .post('/api/v1/feedback')
          .set({ Authorization: writer.auth, ...from('203.0.113.10') })
          .send({ message: `note ${i}` });
        statuses.push(last.status);
      }
      expect(statuses).toEqual([201, 201, 201, 429, 429]);
      expect429(last!);
      expect(await limited.prisma.feedback.count({ where: { userId: writer.user.id } })).toBe(3);
      for (let i = 0; i < 5; i += 1) {
        const read = await limited.http
          .get('/api/v1/me')
          .set({ Authorization: writer.auth, ...from('203.0.113.10') });
        expect(read.status).toBe(200);
      }
      const other = await world.user('other-writer');
      const res = await limited.http
        .post('/api/v1/feedback')
        .set({ Authorization: other.auth, ...from('203.0.113.10') })
        .send({ message: 'mine' });
      expect(res.status).toBe(201);
    });

    it('limits unauthenticated requests per client IP: refused e-mail links and 401 answers', async () => {
      // An e-mail link's token is its credential: each refused one counts once its answer is known, and the
      // fifth blocks the address.
      const statuses: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        statuses.push(
          (await limited.http.get('/api/v1/email/unsubscribe?t=bogus').set(from('203.0.113.20'))).status,
        );
      }
      expect(statuses).toEqual([400, 400, 400, 400, 400]);
      await waitFor(async () => limited.app.get(RequestRateLimiter).ipBlock('203.0.113.20'));
      expect429(await limited.http.post('/api/v1/email/unsubscribe?t=bogus').set(from('203.0.113.20')));

      const denied: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        denied.push((await limited.http.get('/api/v1/me').set(from('203.0.113.21'))).status);
      }
      expect(denied.slice(0, 4)).toEqual([401, 401, 401, 401]);
      // A 401 is counted once its answer has finished (its status is known only then), so the fifth's
      // count, which blocks the address, may land just after the client has its answer.
      await waitFor(async () => limited.app.get(RequestRateLimiter).ipBlock('203.0.113.21'));
      denied.push((await limited.http.get('/api/v1/me').set(from('203.0.113.21'))).status);
      expect(denied.slice(5)).toEqual([429]);
      expect429(await limited.http.get('/api/v1/email/unsubscribe?t=bogus').set(from('203.0.113.21')));
      // DESIGN 5c: per IP for unauthenticated requests *only*. A signed-in user behind either blocked address
      // (a NAT, a proxy) is served, reads and writes; failed credentials from it get the address's 429.
      const neighbour = await world.user('behind-the-nat');
      for (const ip of ['203.0.113.20', '203.0.113.21']) {
        const signedIn = { Authorization: neighbour.auth, ...from(ip) };
        expect((await limited.http.get('/api/v1/me').set(signedIn)).status).toBe(200);
        expect(
          (
            await limited.http
              .post('/api/v1/feedback')
              .set(signedIn)
              .send({ message: `from ${ip}` })
          ).status,
        ).toBe(201);
        expect429(
          await limited.http.get('/api/v1/me').set({ Authorization: 'Bearer not-a-token', ...from(ip) }),
        );
        // Outside the API (the queue dashboard's own ticket gate) a header does not lift the block.
        expect429(
          await limited.http
            .get('/admin/queues/login?ticket=guess')
            .set({ Authorization: 'Bearer not-a-token', ...from(ip) }),
        );
      }
      // Another address is unaffected; probes and the providers' webhooks are never limited.
      expect((await limited.http.get('/api/v1/me').set(from('203.0.113.22'))).status).toBe(401);
      for (let i = 0; i < 6; i += 1) {
        expect((await limited.http.get('/health').set(from('203.0.113.21'))).status).toBe(200);
        expect(
          (await limited.http.post('/webhooks/billing').set(from('203.0.113.21')).send({})).status,
        ).not.toBe(429);
      }
    });

    it("serves valid e-mail links beyond the per-IP limit, also from a blocked address: a mail provider's one-click POSTs", async () => {
      // RFC 8058: the recipients' mail provider POSTs the one-click unsubscribes from a few servers.
      const tokens = limited.app.get(UnsubscribeTokens);
      const provider = from('203.0.113.40');
      // More recipients than one user's e-mail link bound: that bound is per user, never per address.
      const recipients = await Promise.all(
        Array.from({ length: EMAIL_LINK_LIMIT.perUser + 4 }, (_, i) => world.user(`one-click-${i}`)),
      );
      for (const recipient of recipients) {
        const res = await limited.http
          .post(`/api/v1/email/unsubscribe?t=${encodeURIComponent(tokens.sign(recipient.user.id))}`)
          .type('form')
          .set(provider)
          .send('List-Unsubscribe=One-Click');
        expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { unsubscribed: true } });
      }
      expect(limited.app.get(RequestRateLimiter).ipBlock('203.0.113.40')).toBeNull();
      // Forged links from the same servers are counted and block them; valid ones are still served.
      for (let i = 0; i < 5; i += 1) {
        const res = await limited.http.post('/api/v1/email/unsubscribe?t=forged').set(provider);
        expect(res.status).toBe(400);
      }
      await waitFor(async () => limited.app.get(RequestRateLimiter).ipBlock('203.0.113.40'));
      expect429(await limited.http.post('/api/v1/email/unsubscribe?t=forged').set(provider));
      expect429(await limited.http.get('/api/v1/me').set(provider));
      const late = await world.user('one-click-late');
      const served = await limited.http
        .post(`/api/v1/email/unsubscribe?t=${encodeURIComponent(tokens.sign(late.user.id))}`)
        .set(provider);
      expect(served.status).toBe(200);
      const page = await limited.http
        .get(`/api/v1/email/unsubscribe?t=${encodeURIComponent(tokens.sign(late.user.id))}`)
        .set(provider);
      expect(page.status).toBe(200);
    });

    it('bounds the requests of valid e-mail links per user they name: a leaked link is not replayed without end', async () => {
      const tokens = limited.app.get(UnsubscribeTokens);
      const victim = await world.user('leaked-link');
      await limited.prisma.user.update({
        where: { id: victim.user.id },
        data: { marketingConsentGiven: true, marketingConsentSource: 'account_settings' },
      });
      const link = (purpose: 'marketing' | 'confirm', userId: string) =>
        `/api/v1/email/${purpose === 'marketing' ? 'unsubscribe' : 'confirm'}?t=${encodeURIComponent(
          tokens.sign(userId, purpose, purpose === 'confirm' ? new Date(Date.now() + 86_400_000) : undefined),
        )}`;
      // The page of the leaked link, fetched from ever new addresses (the per-IP limit never sees it).
      const statuses: number[] = [];
      for (let i = 0; i < EMAIL_LINK_LIMIT.perUser; i += 1) {
        statuses.push(
          (await limited.http.get(link('marketing', victim.user.id)).set(from(`198.51.100.${i + 1}`))).status,
        );
      }
      expect(statuses).toEqual(Array(EMAIL_LINK_LIMIT.perUser).fill(200));
      const over = await limited.http.get(link('marketing', victim.user.id)).set(from('198.51.100.200'));
      expect429(over);
      expect(Number(over.headers['retry-after'])).toBeLessThanOrEqual(EMAIL_LINK_LIMIT.windowSeconds);
      expect(over.headers['ratelimit-limit']).toBe(String(EMAIL_LINK_LIMIT.perUser));
      // One budget per user for both links' pages and the confirmation.
      expect429(await limited.http.get(link('confirm', victim.user.id)).set(from('198.51.100.201')));
      expect429(await limited.http.post(link('confirm', victim.user.id)).set(from('198.51.100.202')));
      // The person's own one-click unsubscribe after the link scanners (or a replay) used the budget up: a
      // withdrawal is never refused (RFC 8058; it is idempotent, so a replay changes nothing more).
      for (let i = 0; i < 3; i += 1) {
        const oneClick = await limited.http
          .post(link('marketing', victim.user.id))
          .type('form')
          .set(from('198.51.100.203'))
          .send('List-Unsubscribe=One-Click');
        expect({ status: oneClick.status, body: oneClick.body }).toEqual({
          status: 200,
          body: { unsubscribed: true },
        });
      }
      const after = await limited.prisma.user.findUniqueOrThrow({ where: { id: victim.user.id } });
      expect(after.marketingConsentGiven).toBe(false);
      expect(
        await limited.prisma.auditLog.count({ where: { action: 'email.unsubscribed', userId: victim.sub } }),
      ).toBe(1);
      // Still refused: the pages and the confirmation keep their bound.
      expect429(await limited.http.get(link('marketing', victim.user.id)).set(from('198.51.100.204')));
      expect429(await limited.http.post(link('confirm', victim.user.id)).set(from('198.51.100.204')));
      // Another user's links are served, from the same addresses.
      const other = await world.user('other-link');
      expect(
        (await limited.http.get(link('marketing', other.user.id)).set(from('198.51.100.200'))).status,
      ).toBe(200);
      const unsubscribed = await limited.http
        .post(link('marketing', other.user.id))
        .type('form')
        .set(from('198.51.100.200'))
        .send('List-Unsubscribe=One-Click');
      expect({ status: unsubscribed.status, body: unsubscribed.body }).toEqual({
        status: 200,
        body: { unsubscribed: true },
      });
      // A forged or tampered token names nobody: it is the route's 400, counted for its address only.
      const forged = await limited.http.get('/api/v1/email/unsubscribe?t=forged').set(from('198.51.100.203'));
      expect(forged.status).toBe(400);
    });

    it("resets a user's e-mail link bound when its window ends", async () => {
      const config = world.env.configWith({ TRUST_PROXY_HOPS: '1' });
      // The same code with a bound of 2 in a 1 s window, so the test does not wait a minute.
      config.limits.emailLinksPerUser = 2;
      config.limits.emailLinkWindowSeconds = 1;
      const short = await world.env.startApi({ config });
      const tokens = short.app.get(UnsubscribeTokens);
      const user = await world.user('link-window');
      const page = () =>
        short.http.get(`/api/v1/email/unsubscribe?t=${encodeURIComponent(tokens.sign(user.user.id))}`);
      expect([(await page()).status, (await page()).status]).toEqual([200, 200]);
      const over = await page();
      expect429(over);
      expect(over.headers['retry-after']).toBe('1');
      // Served again once the window has ended (a poll with a deadline, not a fixed sleep).
      const served = await waitFor(async () => ((await page()).status === 200 ? true : null), 5_000);
      expect(served).toBe(true);
    });

    it('writes at most ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR admin.unauthorized rows per user, still answering 403', async () => {
      const prober = await world.user('prober');
      const rows = () =>
        limited.prisma.auditLog.count({ where: { action: 'admin.unauthorized', userId: prober.sub } });
      for (let i = 0; i < 5; i += 1) {
        const res = await limited.http
          .get('/api/v1/admin/stats')
          .set({ Authorization: prober.auth, ...from('203.0.113.30') });
        expect(res.status).toBe(403);
        expect(res.body.code).toBe('admin_required');
      }
      expect(await rows()).toBe(2);
    });
  });
});
