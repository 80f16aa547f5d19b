import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { MISSING_UUID, notFoundBody } from './owned-helpers.js';

/** Spec rules 1-2 for every owned resource: another user's row behaves exactly like a missing one. */
const RESOURCES = [
  { path: '/api/v1/saved_searches', body: { name: 'mine', query: 'q' }, patch: { name: 'stolen' } },
  { path: '/api/v1/workspaces', body: { name: 'mine' }, patch: { name: 'stolen' } },
  { path: '/api/v1/api_keys', body: { name: 'mine' }, patch: null },
] as const;

describe('owned resources across two users: 404, never 403', () => {
  let env: TestEnv;
  let api: ApiApp;
  let owner: string;
  let intruder: string;
  let intruderKey: string;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    owner = await api.bearer('user_iso_owner');
    intruder = await api.bearer('user_iso_intruder');
    const key = await api.http
      .post('/api/v1/api_keys')
      .set('Authorization', intruder)
      .send({ name: 'intruder key' });
    intruderKey = `Bearer ${key.body.secret}`;
  });
  afterAll(() => env.close());

  describe.each(RESOURCES)('$path', ({ path, body, patch }) => {
    let id: string;
    let original: Record<string, unknown>;

    beforeAll(async () => {
      const res = await api.http.post(path).set('Authorization', owner).send(body);
      expect(res.status).toBe(201);
      id = res.body.id;
      const { secret: _secret, ...shown } = res.body;
      original = shown;
    });

    it.each([
      ['a JWT', () => intruder],
      ['an API key', () => intruderKey],
    ])(
      'answers read, update and delete of the row with the missing-row 404 (intruder using %s)',
      async (_how, auth) => {
        const authorization = auth();
        const missing = notFoundBody(
          await api.http.get(`${path}/${MISSING_UUID}`).set('Authorization', authorization),
        );
        expect(missing).toMatchObject({ status: 404, code: 'not_found' });
        expect(notFoundBody(await api.http.get(`${path}/${id}`).set('Authorization', authorization))).toEqual(
          missing,
        );
        if (patch) {
          const res = await api.http.patch(`${path}/${id}`).set('Authorization', authorization).send(patch);
          expect(notFoundBody(res)).toEqual(missing);
        }
        if (authorization === intruder || !path.endsWith('api_keys')) {
          const res = await api.http.delete(`${path}/${id}`).set('Authorization', authorization);
          expect(notFoundBody(res)).toEqual(missing);
        }
      },
    );

    it("leaves the owner's row untouched and out of the intruder's list", async () => {
      const list = await api.http.get(`${path}?page_size=200`).set('Authorization', intruder);
      expect(list.status).toBe(200);
      expect(list.body.items.map((item: { id: string }) => item.id)).not.toContain(id);
      const mine = await api.http.get(`${path}/${id}`).set('Authorization', owner);
      expect(mine.status).toBe(200);
      const { last_used_at: _lastUsed, ...now } = mine.body;
      const { last_used_at: _lastUsedBefore, ...before } = original;
      expect(now).toEqual(before);
      const intruderActions = await api.prisma.auditLog.count({
        where: { resourceId: id, userId: 'user_iso_intruder' },
      });
      expect(intruderActions).toBe(0);
    });
  });

  it("removes every owned row with its user (database cascade), and only that user's", async () => {
    const doomed = await api.bearer('user_iso_doomed');
    for (const { path, body } of RESOURCES) {
      expect((await api.http.post(path).set('Authorization', doomed).send(body)).status).toBe(201);
    }
    const user = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_iso_doomed' } });
    const counts = () =>
      Promise.all([
        api.prisma.savedSearch.count({ where: { userId: user.id } }),
        api.prisma.workspace.count({ where: { userId: user.id } }),
        api.prisma.apiKey.count({ where: { userId: user.id } }),
      ]);
    expect(await counts()).toEqual([1, 1, 1]);
    const othersBefore = await api.prisma.savedSearch.count();
    await api.prisma.user.delete({ where: { id: user.id } });
    expect(await counts()).toEqual([0, 0, 0]);
    expect(await api.prisma.savedSearch.count()).toBe(othersBefore - 1);
  });
});
