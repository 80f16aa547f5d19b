import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import {
  expectProblem,
  ISO_TIMESTAMP,
  MISSING_UUID,
  notFoundBody,
  userOnTier,
  UUID,
} from './owned-helpers.js';

const BASE = '/api/v1/workspaces';

describe('workspaces (built on the owned-resource pattern)', () => {
  let env: TestEnv;
  let api: ApiApp;
  let alice: string;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    alice = await userOnTier(api, 'user_ws_alice', 'TEAM');
  });
  afterAll(() => env.close());

  const create = (body: object, authorization = alice) =>
    api.http.post(BASE).set('Authorization', authorization).send(body);

  it('creates with 201 and every response field; description defaults to null', async () => {
    const res = await create({ name: 'Team A' });
    expect(res.status).toBe(201);
    const owner = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_ws_alice' } });
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      user_id: owner.id,
      name: 'Team A',
      description: null,
      created_at: expect.stringMatching(ISO_TIMESTAMP),
      updated_at: expect.stringMatching(ISO_TIMESTAMP),
    });
    const described = await create({ name: 'Team B', description: 'the second one' });
    expect(described.body.description).toBe('the second one');
    // The create answers from the row its statement returned: the same as a later read.
    const read = await api.http.get(`${BASE}/${described.body.id}`).set('Authorization', alice);
    expect(read.body).toEqual(described.body);
    expect((await create({ name: 'w'.repeat(200), description: null })).status).toBe(201);
    // An unpaired surrogate in a text field is refused (400 naming it), as in every JSON body: never stored
    // as U+FFFD, never a 500 (test/security/request-text.e2e-spec.ts covers the other routes).
    const lone = await create({ name: 'lone \udfff', description: '\ud800 x' });
    expect(lone.status).toBe(400);
    expect(lone.body.errors).toEqual([
      { field: expect.stringMatching(/^(name|description)$/), message: expect.stringMatching(/surrogates/) },
    ]);
  });

  it.each([
    ['an empty name', { name: '' }, 'name'],
    ['a name over 200 characters', { name: 'w'.repeat(201) }, 'name'],
    ['a missing name', { description: 'd' }, 'name'],
    ['a description over 2000 characters', { name: 'n', description: 'd'.repeat(2001) }, 'description'],
    ['a numeric description', { name: 'n', description: 5 }, 'description'],
    ['a client-supplied user_id', { name: 'n', user_id: MISSING_UUID }, 'user_id'],
    ['an unknown field', { name: 'n', members: [] }, 'members'],
  ])('refuses %s with a 400 problem', async (_case, body, field) => {
    const res = await create(body);
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it('lists newest first with the paging rules of owned lists', async () => {
    const lister = await api.bearer('user_ws_lister');
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await create({ name: `w${i}` }, lister)).body.id);
    const res = await api.http.get(`${BASE}?page=abc&page_size=500`).set('Authorization', lister);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 3, page: 1, page_size: 50 });
    expect(res.body.items.map((item: { id: string }) => item.id)).toEqual([...ids].reverse());
    const second = await api.http.get(`${BASE}?page=2&page_size=2`).set('Authorization', lister);
    expect(second.body).toMatchObject({ total: 3, page: 2, page_size: 2, items: [{ id: ids[0] }] });
  });

  it('patches only the supplied fields; description null clears it; name null is refused', async () => {
    const created = await create({ name: 'Old', description: 'keep me' });
    const path = `${BASE}/${created.body.id}`;
    const renamed = await api.http.patch(path).set('Authorization', alice).send({ name: 'New' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'New', description: 'keep me' });
    const cleared = await api.http.patch(path).set('Authorization', alice).send({ description: null });
    expect(cleared.body).toMatchObject({ name: 'New', description: null });
    expectProblem(await api.http.patch(path).set('Authorization', alice).send({ name: null }), 400);
    expect((await api.http.get(path).set('Authorization', alice)).body).toMatchObject({ name: 'New' });
  });

  it('deletes with 204; then 404 with the same body as a missing id', async () => {
    const created = await create({ name: 'Temporary' });
    const path = `${BASE}/${created.body.id}`;
    expect((await api.http.delete(path).set('Authorization', alice)).status).toBe(204);
    const missing = notFoundBody(await api.http.get(`${BASE}/${MISSING_UUID}`).set('Authorization', alice));
    expect(notFoundBody(await api.http.get(path).set('Authorization', alice))).toEqual(missing);
    expect(notFoundBody(await api.http.delete(path).set('Authorization', alice))).toEqual(missing);
    expect(notFoundBody(await api.http.get(`${BASE}/not-a-uuid`).set('Authorization', alice))).toEqual(
      missing,
    );
  });

  it('audits workspace.created, workspace.updated (sorted fields_changed) and workspace.deleted', async () => {
    const created = await create({ name: 'Audited', description: 'private words' });
    const path = `${BASE}/${created.body.id}`;
    await api.http.patch(path).set('Authorization', alice).send({ name: 'Renamed', description: 'other' });
    await api.http.delete(path).set('Authorization', alice);
    const entries = await api.prisma.auditLog.findMany({
      where: { resourceId: created.body.id },
      orderBy: { createdAt: 'asc' },
    });
    expect(entries.map((entry) => [entry.action, entry.details])).toEqual([
      ['workspace.created', { via: 'jwt' }],
      ['workspace.updated', { fields_changed: ['description', 'name'], via: 'jwt' }],
      ['workspace.deleted', { via: 'jwt' }],
    ]);
    expect(
      entries.every((entry) => entry.actor === 'user:user_ws_alice' && entry.resourceType === 'workspace'),
    ).toBe(true);
    expect(JSON.stringify(entries)).not.toContain('private words');
  });

  it('enforces the tier limit with 409 limit_reached', async () => {
    const authorization = await api.bearer('user_ws_quota');
    await api.http.get(BASE).set('Authorization', authorization);
    const owner = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_ws_quota' } });
    const limit = api.config.project.tiers.FREE.limits.workspaces;
    await api.prisma.workspace.createMany({
      data: Array.from({ length: limit }, (_, i) => ({ userId: owner.id, name: `w${i}` })),
    });
    expectProblem(await create({ name: 'one too many' }, authorization), 409, 'limit_reached');
  });

  it('answers 401 without a token', async () => {
    expectProblem(await api.http.get(BASE), 401);
    expectProblem(await api.http.post(BASE).send({ name: 'n' }), 401);
  });
});
