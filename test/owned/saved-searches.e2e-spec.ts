import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { OwnedRepository } from '../../src/kit/owned/owned.repository.js';
import { savedSearchRows } from '../../src/modules/saved-searches/saved-searches.repository.js';
import { holding } from '../support/lock-holder.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import {
  captureSql,
  expectProblem,
  ISO_TIMESTAMP,
  MALFORMED_IDS,
  MISSING_UUID,
  notFoundBody,
  UUID,
} from './owned-helpers.js';

const BASE = '/api/v1/saved_searches';

describe('saved searches (spec: owned-resource pattern)', () => {
  let env: TestEnv;
  let api: ApiApp;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    alice = await api.bearer('user_ss_alice');
    bob = await api.bearer('user_ss_bob');
  });
  afterAll(() => env.close());

  const create = (authorization: string, body: object) =>
    api.http.post(BASE).set('Authorization', authorization).send(body);
  const userOf = (identityUserId: string) => api.prisma.user.findUniqueOrThrow({ where: { identityUserId } });
  const auditOf = (resourceId: string) =>
    api.prisma.auditLog.findMany({ where: { resourceId }, orderBy: { createdAt: 'asc' } });

  describe('POST', () => {
    it('answers 201 with every response field; the owner comes from the principal', async () => {
      const res = await create(alice, { name: 'Berlin flats', query: 'flat berlin', filters: { rooms: 2 } });
      expect(res.status).toBe(201);
      const owner = await userOf('user_ss_alice');
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        user_id: owner.id,
        name: 'Berlin flats',
        query: 'flat berlin',
        filters: { rooms: 2 },
        created_at: expect.stringMatching(ISO_TIMESTAMP),
        updated_at: expect.stringMatching(ISO_TIMESTAMP),
      });
      const row = await api.prisma.savedSearch.findUniqueOrThrow({ where: { id: res.body.id } });
      expect(row).toMatchObject({ userId: owner.id, name: 'Berlin flats', filters: { rooms: 2 } });
    });

    it('defaults filters to an empty object and stores nested JSON as given', async () => {
      const plain = await create(alice, { name: 'n', query: 'q' });
      expect(plain.status).toBe(201);
      expect(plain.body.filters).toEqual({});
      const nested = {
        price: { min: 1, max: null },
        tags: ['a', 'b', 3, true],
        deep: { x: { y: { z: 'é 🏠' } } },
      };
      const res = await create(alice, { name: 'n', query: '', filters: nested });
      expect(res.status).toBe(201);
      expect(res.body.filters).toEqual(nested);
      expect(res.body.query).toBe('');
    });

    it('accepts a name of exactly 200 characters (counted as characters, not UTF-16 units)', async () => {
      expect((await create(alice, { name: 'x'.repeat(200), query: 'q' })).status).toBe(201);
      expect((await create(alice, { name: '🏠'.repeat(200), query: 'q' })).status).toBe(201);
    });

    it.each([
      ['a name over 200 characters', { name: 'x'.repeat(201), query: 'q' }, 'name'],
      ['a missing name', { query: 'q' }, 'name'],
      ['an empty name', { name: '', query: 'q' }, 'name'],
      ['a blank name', { name: '   ', query: 'q' }, 'name'],
      ['a null name', { name: null, query: 'q' }, 'name'],
      ['a numeric name', { name: 5, query: 'q' }, 'name'],
      ['a missing query', { name: 'n' }, 'query'],
      ['a null query', { name: 'n', query: null }, 'query'],
      ['filters as an array', { name: 'n', query: 'q', filters: [1] }, 'filters'],
      ['filters as a string', { name: 'n', query: 'q', filters: '{}' }, 'filters'],
      ['filters as null', { name: 'n', query: 'q', filters: null }, 'filters'],
      ['a NUL character in the name', { name: 'a\u0000b', query: 'q' }, 'name'],
      ['a NUL character in the query', { name: 'n', query: 'a\u0000b' }, 'query'],
      ['a NUL character inside filters', { name: 'n', query: 'q', filters: { k: ['a\u0000'] } }, 'filters'],
      ['filters over 32 KB', { name: 'n', query: 'q', filters: { big: 'x'.repeat(33_000) } }, 'filters'],
      ['a client-supplied id', { id: MISSING_UUID, name: 'n', query: 'q' }, 'id'],
      ['a client-supplied user_id', { user_id: MISSING_UUID, name: 'n', query: 'q' }, 'user_id'],
      [
        'a client-supplied created_at',
        { created_at: '2020-01-01T00:00:00Z', name: 'n', query: 'q' },
        'created_at',
      ],
      [
        'a client-supplied updated_at',
        { updated_at: '2020-01-01T00:00:00Z', name: 'n', query: 'q' },
        'updated_at',
      ],
      ['an unknown field', { name: 'n', query: 'q', colour: 'red' }, 'colour'],
    ])('refuses %s with a 400 problem naming the field', async (_case, body, field) => {
      const before = await api.prisma.savedSearch.count();
      const res = await create(alice, body);
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
      expect(await api.prisma.savedSearch.count()).toBe(before);
    });

    it('refuses bodies the validator cannot walk safely with a 400, never a 500', async () => {
      const deep = `{"name":"n","query":"q","filters":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
      const tooDeep = await api.http.post(BASE).set('Authorization', alice).type('json').send(deep);
      expectProblem(tooDeep, 400, 'validation_failed');
      const nested33 = `{"name":"n","query":"q","filters":${'{"a":'.repeat(33)}1${'}'.repeat(33)}}`;
      expectProblem(await api.http.post(BASE).set('Authorization', alice).type('json').send(nested33), 400);
      for (const filters of [
        '{"constructor":{"prototype":{"x":1}}}',
        '{"__proto__":{"x":1}}',
        '{"constructor":1}',
      ]) {
        const res = await api.http
          .post(BASE)
          .set('Authorization', alice)
          .type('json')
          .send(`{"name":"n","query":"q","filters":${filters}}`);
        expectProblem(res, 400, 'validation_failed');
      }
      expect(({} as Record<string, unknown>).x).toBeUndefined();
    });

    it('answers malformed JSON with a 400 problem', async () => {
      const res = await api.http.post(BASE).set('Authorization', alice).type('json').send('{"name": ');
      expectProblem(res, 400);
    });
  });

  describe('GET list', () => {
    let listUser: string;
    let ids: string[];

    beforeAll(async () => {
      listUser = await api.bearer('user_ss_lister');
      ids = [];
      for (let i = 0; i < 7; i += 1) {
        const res = await create(listUser, { name: `s${i}`, query: 'q' });
        ids.push(res.body.id);
      }
      await create(bob, { name: 'not yours', query: 'q' });
    });

    const list = (query = '', authorization = listUser) =>
      api.http.get(`${BASE}${query}`).set('Authorization', authorization);

    it("returns only the caller's rows, newest first, with total, page and page_size", async () => {
      const res = await list();
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['items', 'page', 'page_size', 'total']);
      expect(res.body).toMatchObject({ total: 7, page: 1, page_size: 50 });
      expect(res.body.items.map((item: { id: string }) => item.id)).toEqual([...ids].reverse());
      const owner = await userOf('user_ss_lister');
      expect(res.body.items.every((item: { user_id: string }) => item.user_id === owner.id)).toBe(true);
    });

    it('pages with total counting all of the caller rows', async () => {
      const second = await list('?page=2&page_size=3');
      expect(second.body).toMatchObject({ total: 7, page: 2, page_size: 3 });
      expect(second.body.items.map((item: { id: string }) => item.id)).toEqual([ids[3], ids[2], ids[1]]);
      const last = await list('?page=3&page_size=3');
      expect(last.body).toMatchObject({ total: 7, page: 3 });
      expect(last.body.items.map((item: { id: string }) => item.id)).toEqual([ids[0]]);
      const beyond = await list('?page=9&page_size=3');
      expect(beyond.body).toEqual({ items: [], total: 7, page: 9, page_size: 3 });
    });

    it.each([
      ['page=0', 1, 50],
      ['page=-4', 1, 50],
      ['page=abc', 1, 50],
      ['page=1.5', 1, 50],
      ['page=', 1, 50],
      ['page=1&page=2', 1, 50],
      ['page_size=0', 1, 50],
      ['page_size=-1', 1, 50],
      ['page_size=201', 1, 50],
      ['page_size=abc', 1, 50],
      ['page_size=1e2', 1, 50],
      ['page_size=200', 1, 200],
      ['page_size=1', 1, 1],
      ['page=2&page_size=abc', 2, 50],
      ['page=99999999999999999999999999&page_size=200', 1_000_000_000, 200],
    ])('normalises %s without a 400 (page %i, page_size %i)', async (query, page, pageSize) => {
      const res = await list(`?${query}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ page, page_size: pageSize, total: 7 });
    });

    it('orders rows with the same created_at by id, newest first, stably across pages', async () => {
      const tie = await api.bearer('user_ss_tie');
      await api.http.get(BASE).set('Authorization', tie);
      const owner = await userOf('user_ss_tie');
      const at = new Date('2026-01-01T00:00:00.000Z');
      await api.prisma.savedSearch.createMany({
        data: Array.from({ length: 6 }, (_, i) => ({
          userId: owner.id,
          name: `t${i}`,
          query: 'q',
          createdAt: at,
        })),
      });
      const expected = (await api.prisma.savedSearch.findMany({ where: { userId: owner.id } }))
        .map((row) => row.id)
        .sort()
        .reverse();
      const pages = await Promise.all([1, 2, 3].map((page) => list(`?page=${page}&page_size=2`, tie)));
      expect(pages.flatMap((res) => res.body.items.map((item: { id: string }) => item.id))).toEqual(expected);
    });

    it('answers an empty list for a user without rows', async () => {
      const res = await list('', await api.bearer('user_ss_empty'));
      expect(res.body).toEqual({ items: [], total: 0, page: 1, page_size: 50 });
    });
  });

  describe('GET one', () => {
    it('returns the resource to its owner', async () => {
      const created = await create(alice, { name: 'mine', query: 'q', filters: { a: 1 } });
      const res = await api.http.get(`${BASE}/${created.body.id}`).set('Authorization', alice);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(created.body);
    });

    it("answers 404 for a missing id, another user's row and malformed ids, all with the same body", async () => {
      const foreign = await create(bob, { name: 'bob only', query: 'q' });
      const missing = notFoundBody(await api.http.get(`${BASE}/${MISSING_UUID}`).set('Authorization', alice));
      expectProblem(
        await api.http.get(`${BASE}/${MISSING_UUID}`).set('Authorization', alice),
        404,
        'not_found',
      );
      expect(
        notFoundBody(await api.http.get(`${BASE}/${foreign.body.id}`).set('Authorization', alice)),
      ).toEqual(missing);
      for (const id of MALFORMED_IDS) {
        const res = await api.http.get(`${BASE}/${encodeURIComponent(id)}`).set('Authorization', alice);
        expect(notFoundBody(res)).toEqual(missing);
      }
    });

    it('runs the very same query for a missing row and for a row of another user', async () => {
      const foreign = await create(bob, { name: 'bob only', query: 'q' });
      const capture = captureSql(api.prisma.pool);
      try {
        await api.http.get(`${BASE}/${MISSING_UUID}`).set('Authorization', alice);
        const missing = capture.matching(/saved_searches/);
        capture.clear();
        await api.http.get(`${BASE}/${foreign.body.id}`).set('Authorization', alice);
        const other = capture.matching(/saved_searches/);
        expect(missing).toHaveLength(1);
        expect(other).toHaveLength(1);
        expect(other[0].text).toBe(missing[0].text);
        expect(missing[0].text).toMatch(/"id" = \$1 AND .*"user_id" = \$2/);
      } finally {
        capture.restore();
      }
    });
  });

  describe('PATCH', () => {
    it('writes an update with no model field as updated_at alone, with its other part (repository)', async () => {
      const created = await create(alice, { name: 'untouched', query: 'q' });
      const owner = await userOf('user_ss_alice');
      const repository = new OwnedRepository(savedSearchRows, 'saved_searches');
      const row = await repository.updateOwnedWritten(
        api.prisma,
        owner.id,
        created.body.id,
        { name: undefined },
        (_params, writtenRows) => `SELECT ord FROM ${writtenRows}`,
      );
      expect(row).toMatchObject({ id: created.body.id, name: 'untouched', query: 'q' });
      expect(row!.updatedAt.getTime()).toBeGreaterThan(Date.parse(created.body.updated_at));
    });

    it('changes only the supplied fields and moves updated_at', async () => {
      const created = await create(alice, { name: 'before', query: 'q1', filters: { a: 1 } });
      const res = await api.http
        .patch(`${BASE}/${created.body.id}`)
        .set('Authorization', alice)
        .send({ query: 'q2' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: created.body.id, name: 'before', query: 'q2', filters: { a: 1 } });
      expect(res.body.created_at).toBe(created.body.created_at);
      expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(created.body.updated_at));
      const replaced = await api.http
        .patch(`${BASE}/${created.body.id}`)
        .set('Authorization', alice)
        .send({ filters: { b: 2 }, name: 'after' });
      expect(replaced.body).toMatchObject({ name: 'after', query: 'q2', filters: { b: 2 } });
      const stored = await api.prisma.savedSearch.findUniqueOrThrow({ where: { id: created.body.id } });
      expect(stored).toMatchObject({ name: 'after', query: 'q2', filters: { b: 2 } });
    });

    it('treats an empty patch as a no-op: 200, nothing written, no audit entry', async () => {
      const created = await create(alice, { name: 'same', query: 'q' });
      const res = await api.http.patch(`${BASE}/${created.body.id}`).set('Authorization', alice).send({});
      expect(res.status).toBe(200);
      expect(res.body).toEqual(created.body);
      expect((await auditOf(created.body.id)).map((entry) => entry.action)).toEqual(['saved_search.created']);
    });

    it.each([
      ['a null name', { name: null }, 'name'],
      ['a null query', { query: null }, 'query'],
      ['null filters', { filters: null }, 'filters'],
      ['a name over 200 characters', { name: 'y'.repeat(201) }, 'name'],
      ['filters as an array', { filters: [] }, 'filters'],
      ['user_id', { user_id: MISSING_UUID }, 'user_id'],
      ['id', { id: MISSING_UUID }, 'id'],
      ['created_at', { created_at: '2020-01-01T00:00:00Z' }, 'created_at'],
      ['updated_at', { updated_at: '2020-01-01T00:00:00Z' }, 'updated_at'],
      ['an unknown field', { colour: 'red' }, 'colour'],
    ])('refuses %s with a 400 and changes nothing', async (_case, body, field) => {
      const created = await create(alice, { name: 'keep', query: 'keep' });
      const res = await api.http.patch(`${BASE}/${created.body.id}`).set('Authorization', alice).send(body);
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
      const stored = await api.prisma.savedSearch.findUniqueOrThrow({ where: { id: created.body.id } });
      expect(stored).toMatchObject({
        name: 'keep',
        query: 'keep',
        userId: (await userOf('user_ss_alice')).id,
      });
    });

    it("answers 404 for missing, another user's and malformed ids, and leaves the other row alone", async () => {
      const foreign = await create(bob, { name: 'bob only', query: 'q' });
      const missing = notFoundBody(
        await api.http.patch(`${BASE}/${MISSING_UUID}`).set('Authorization', alice).send({ name: 'x' }),
      );
      const res = await api.http
        .patch(`${BASE}/${foreign.body.id}`)
        .set('Authorization', alice)
        .send({ name: 'x' });
      expect(notFoundBody(res)).toEqual(missing);
      for (const id of MALFORMED_IDS.slice(0, 3)) {
        const bad = await api.http
          .patch(`${BASE}/${encodeURIComponent(id)}`)
          .set('Authorization', alice)
          .send({});
        expect(notFoundBody(bad)).toEqual(missing);
      }
      const stored = await api.prisma.savedSearch.findUniqueOrThrow({ where: { id: foreign.body.id } });
      expect(stored.name).toBe('bob only');
      expect(
        await api.prisma.auditLog.count({ where: { resourceId: foreign.body.id, userId: 'user_ss_alice' } }),
      ).toBe(0);
    });
  });

  describe('DELETE', () => {
    it('answers 204, then the row is gone (404 on read, update and delete)', async () => {
      const created = await create(alice, { name: 'bye', query: 'q' });
      const res = await api.http.delete(`${BASE}/${created.body.id}`).set('Authorization', alice);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expect(await api.prisma.savedSearch.findUnique({ where: { id: created.body.id } })).toBeNull();
      expectProblem(await api.http.get(`${BASE}/${created.body.id}`).set('Authorization', alice), 404);
      expectProblem(
        await api.http.patch(`${BASE}/${created.body.id}`).set('Authorization', alice).send({ name: 'x' }),
        404,
      );
      expectProblem(await api.http.delete(`${BASE}/${created.body.id}`).set('Authorization', alice), 404);
    });

    it("answers 404 for another user's row, which survives", async () => {
      const foreign = await create(bob, { name: 'bob only', query: 'q' });
      const missing = notFoundBody(
        await api.http.delete(`${BASE}/${MISSING_UUID}`).set('Authorization', alice),
      );
      expect(
        notFoundBody(await api.http.delete(`${BASE}/${foreign.body.id}`).set('Authorization', alice)),
      ).toEqual(missing);
      expect(notFoundBody(await api.http.delete(`${BASE}/nope`).set('Authorization', alice))).toEqual(
        missing,
      );
      expect(await api.prisma.savedSearch.findUnique({ where: { id: foreign.body.id } })).not.toBeNull();
    });

    it('never turns a concurrent update and delete into a 500', async () => {
      for (let round = 0; round < 10; round += 1) {
        const created = await create(alice, { name: `race${round}`, query: 'q' });
        const path = `${BASE}/${created.body.id}`;
        const [patch, del, again] = await Promise.all([
          api.http.patch(path).set('Authorization', alice).send({ name: 'raced' }),
          api.http.delete(path).set('Authorization', alice),
          api.http.delete(path).set('Authorization', alice),
        ]);
        expect([200, 404]).toContain(patch.status);
        expect([del.status, again.status].sort()).toEqual([204, 404]);
      }
    });
  });

  describe('audit', () => {
    it('writes saved_search.created, .updated with sorted fields_changed, and .deleted without bodies', async () => {
      const secretish = 'confidential-query-text-4711';
      const created = await create(alice, {
        name: 'audited',
        query: secretish,
        filters: { secret: secretish },
      });
      const id = created.body.id;
      await api.http
        .patch(`${BASE}/${id}`)
        .set('Authorization', alice)
        .send({ query: `${secretish}!`, name: 'z', filters: {} });
      await api.http.patch(`${BASE}/${id}`).set('Authorization', alice).send({ query: 'only query' });
      await api.http.delete(`${BASE}/${id}`).set('Authorization', alice);
      const entries = await auditOf(id);
      expect(entries.map((entry) => [entry.action, entry.details])).toEqual([
        ['saved_search.created', { via: 'jwt' }],
        ['saved_search.updated', { fields_changed: ['filters', 'name', 'query'], via: 'jwt' }],
        ['saved_search.updated', { fields_changed: ['query'], via: 'jwt' }],
        ['saved_search.deleted', { via: 'jwt' }],
      ]);
      for (const entry of entries) {
        expect(entry).toMatchObject({
          actor: 'user:user_ss_alice',
          userId: 'user_ss_alice',
          resourceType: 'saved_search',
          resourceId: id,
        });
        expect(entry.requestId).toEqual(expect.any(String));
      }
      expect(JSON.stringify(entries)).not.toContain(secretish);
    });

    it('writes no audit entry for a refused or not-found change', async () => {
      const before = await api.prisma.auditLog.count({ where: { resourceType: 'saved_search' } });
      await create(alice, { name: 'x'.repeat(201), query: 'q' });
      await api.http.patch(`${BASE}/${MISSING_UUID}`).set('Authorization', alice).send({ name: 'x' });
      await api.http.delete(`${BASE}/${MISSING_UUID}`).set('Authorization', alice);
      expect(await api.prisma.auditLog.count({ where: { resourceType: 'saved_search' } })).toBe(before);
    });
  });

  describe('tier limit', () => {
    const freeLimit = () => api.config.project.tiers.FREE.limits.savedSearches;
    /** A FREE user (created by a first request) who already holds `rows` saved searches. */
    const ownerHolding = async (identityUserId: string, rows: number) => {
      const authorization = await api.bearer(identityUserId);
      await api.http.get(BASE).set('Authorization', authorization);
      const owner = await userOf(identityUserId);
      await api.prisma.savedSearch.createMany({
        data: Array.from({ length: rows }, (_, i) => ({ userId: owner.id, name: `s${i}`, query: 'q' })),
      });
      return { authorization, owner };
    };

    it('refuses a create beyond the tier limit with 409 limit_reached, even when creates race', async () => {
      const limit = freeLimit();
      const { authorization, owner } = await ownerHolding('user_ss_quota', limit - 2);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => create(authorization, { name: `race${i}`, query: 'q' })),
      );
      expect(results.map((res) => res.status).sort()).toEqual([201, 201, 409, 409, 409, 409]);
      const refused = results.find((res) => res.status === 409)!;
      expectProblem(refused, 409, 'limit_reached');
      expect(await api.prisma.savedSearch.count({ where: { userId: owner.id } })).toBe(limit);

      await api.http
        .delete(`${BASE}/${results.find((res) => res.status === 201)!.body.id}`)
        .set('Authorization', authorization);
      expect((await create(authorization, { name: 'fits again', query: 'q' })).status).toBe(201);
    });

    it("counts under the owner's lock what the lock's holder committed meanwhile", async () => {
      const limit = freeLimit();
      const { authorization, owner } = await ownerHolding('user_ss_waiter', limit - 1);
      // Another create holds the owner's lock (the key every create of this resource takes) and has
      // inserted the last row the tier allows, not yet committed.
      const holder = await holding(api.prisma, async (tx) => {
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`owned:saved_search:${owner.id}`}, 0))`;
        await tx.savedSearch.create({ data: { userId: owner.id, name: 'held', query: 'q' } });
      });
      const waiting = create(authorization, { name: 'one too many', query: 'q' });
      const settled = await Promise.race([
        waiting.then(() => 'answered'),
        new Promise((resolve) => setTimeout(() => resolve('waiting'), 300)),
      ]);
      holder.release();
      await holder.done;
      // It waited for the lock, then counted the holder's row: the limit is reached.
      expect(settled).toBe('waiting');
      expectProblem(await waiting, 409, 'limit_reached');
      expect(await api.prisma.savedSearch.count({ where: { userId: owner.id } })).toBe(limit);
    });

    it('applies the limit of the user tier', async () => {
      const { authorization, owner } = await ownerHolding('user_ss_pro', freeLimit());
      await api.prisma.user.update({ where: { id: owner.id }, data: { currentTier: 'PRO' } });
      expect((await create(authorization, { name: 'pro can', query: 'q' })).status).toBe(201);
    });
  });

  it('answers 401 problem+json on every route without a token', async () => {
    const responses = await Promise.all([
      api.http.post(BASE).send({ name: 'n', query: 'q' }),
      api.http.get(BASE),
      api.http.get(`${BASE}/${MISSING_UUID}`),
      api.http.patch(`${BASE}/${MISSING_UUID}`).send({ name: 'n' }),
      api.http.delete(`${BASE}/${MISSING_UUID}`),
    ]);
    for (const res of responses) expectProblem(res, 401, 'unauthenticated');
  });

  it("removes a user's saved searches with the user (database cascade)", async () => {
    const authorization = await api.bearer('user_ss_erased');
    await create(authorization, { name: 'gone soon', query: 'q' });
    const owner = await userOf('user_ss_erased');
    await api.prisma.user.delete({ where: { id: owner.id } });
    expect(await api.prisma.savedSearch.count({ where: { userId: owner.id } })).toBe(0);
  });
});
