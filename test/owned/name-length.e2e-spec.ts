import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { expectProblem, userOnTier } from './owned-helpers.js';

interface Resource {
  base: string;
  /** A valid create body around the name under test. */
  body: (name: string) => object;
  /** The stored names of the caller's rows, from the database. */
  storedNames: (api: ApiApp, userId: string) => Promise<string[]>;
  /** API keys have no PATCH. */
  patchable: boolean;
}

const RESOURCES: Record<string, Resource> = {
  saved_searches: {
    base: '/api/v1/saved_searches',
    body: (name) => ({ name, query: 'q' }),
    storedNames: async (api, userId) =>
      (await api.prisma.savedSearch.findMany({ where: { userId } })).map((row) => row.name),
    patchable: true,
  },
  workspaces: {
    base: '/api/v1/workspaces',
    body: (name) => ({ name }),
    storedNames: async (api, userId) =>
      (await api.prisma.workspace.findMany({ where: { userId } })).map((row) => row.name),
    patchable: true,
  },
  api_keys: {
    base: '/api/v1/api_keys',
    body: (name) => ({ name }),
    storedNames: async (api, userId) =>
      (await api.prisma.apiKey.findMany({ where: { userId } })).map((row) => row.name),
    patchable: false,
  },
};

/**
 * Names over 200 characters as PostgreSQL counts them (code points, the VARCHAR(200) rule) that
 * class-validator's Length(1, 200) let through, because it does not count a U+FE0E/U+FE0F variation
 * selector after a character: each passed validation and then failed the insert with a 500.
 */
const TOO_LONG: [string, string][] = [
  ["'❤️' x 200 (400 code points)", '❤️'.repeat(200)],
  ["'❤️' x 101 (202 code points)", '❤️'.repeat(101)],
  ["'a\\uFE0F' x 101 (202 code points)", 'a\uFE0F'.repeat(101)],
  ["'a\\uFE0E' x 101 (202 code points)", 'a\uFE0E'.repeat(101)],
];

/** Exactly 200 code points: the longest names the column holds, all accepted. */
const LONGEST: [string, string][] = [
  ["'🏠' x 200 (astral, 400 UTF-16 units)", '🏠'.repeat(200)],
  ["'❤️' x 100", '❤️'.repeat(100)],
  ["'a\\uFE0F' x 100", 'a\uFE0F'.repeat(100)],
  ["'é' x 200", 'é'.repeat(200)],
];

describe('owned-resource names are limited to 200 code points, as VARCHAR(200) counts them', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  const ownerId = async (sub: string) =>
    (await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } })).id;
  const auditCount = (sub: string) => api.prisma.auditLog.count({ where: { userId: sub } });

  describe.each(Object.entries(RESOURCES))('%s', (kind, resource) => {
    const sub = `user_len_${kind}`;
    let auth: string;

    beforeAll(async () => {
      auth = await userOnTier(api, sub, 'TEAM');
    });

    it.each(TOO_LONG)('refuses a name of %s on create with a 400 and stores nothing', async (_case, name) => {
      const userId = await ownerId(sub);
      const names = await resource.storedNames(api, userId);
      const audits = await auditCount(sub);
      const res = await api.http.post(resource.base).set('Authorization', auth).send(resource.body(name));
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toEqual([{ field: 'name', message: 'name must be at most 200 characters' }]);
      expect(await resource.storedNames(api, userId)).toEqual(names);
      expect(await auditCount(sub)).toBe(audits);
    });

    it.each(LONGEST)('accepts a name of %s on create and stores it unchanged', async (_case, name) => {
      const res = await api.http.post(resource.base).set('Authorization', auth).send(resource.body(name));
      expect(res.status).toBe(201);
      expect(res.body.name).toBe(name);
      expect(await resource.storedNames(api, await ownerId(sub))).toContain(name);
    });

    if (!resource.patchable) return;

    it.each(TOO_LONG)('refuses a name of %s on PATCH with a 400 and changes nothing', async (_case, name) => {
      const created = await api.http
        .post(resource.base)
        .set('Authorization', auth)
        .send(resource.body('before'));
      expect(created.status).toBe(201);
      const audits = await auditCount(sub);
      const res = await api.http
        .patch(`${resource.base}/${created.body.id}`)
        .set('Authorization', auth)
        .send({ name });
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.errors).toEqual([{ field: 'name', message: 'name must be at most 200 characters' }]);
      const after = await api.http.get(`${resource.base}/${created.body.id}`).set('Authorization', auth);
      expect(after.body).toEqual(created.body);
      expect(await auditCount(sub)).toBe(audits);
    });

    it('accepts 200 astral characters on PATCH', async () => {
      const created = await api.http.post(resource.base).set('Authorization', auth).send(resource.body('x'));
      const name = '🏠'.repeat(200);
      const res = await api.http
        .patch(`${resource.base}/${created.body.id}`)
        .set('Authorization', auth)
        .send({ name });
      expect(res.status).toBe(200);
      expect(res.body.name).toBe(name);
    });
  });
});
