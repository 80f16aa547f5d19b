import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RequestMethod, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { AdminDirectoryController } from '../../src/modules/admin/directory/admin-directory.controller.js';
import { FeedbackController } from '../../src/modules/feedback/feedback.controller.js';
import { AccountController } from '../../src/modules/users/account.controller.js';
import { MeController } from '../../src/modules/users/me.controller.js';
import { type SeededUser, seedUserWithEverything } from '../factories/user-data.factory.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

interface Route {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  body?: object;
  /** What the second user gets: their own success, or 403 on admin routes. */
  status: number;
  /** A soft-deleted user may still call it (GET /me, export, restore). */
  allowDeleted?: boolean;
  admin?: boolean;
}

/** Every route this feature added under /api/v1, with a body that would change something. */
const ROUTES: Route[] = [
  { method: 'get', path: '/api/v1/me', status: 200, allowDeleted: true },
  { method: 'patch', path: '/api/v1/me', status: 200, body: { locale: 'fr', marketing_consent_given: true } },
  {
    method: 'post',
    path: '/api/v1/account/me/signup-metadata',
    status: 200,
    body: { utm_source: 'mallory' },
  },
  { method: 'get', path: '/api/v1/account/me/export', status: 200, allowDeleted: true },
  { method: 'post', path: '/api/v1/account/me/restore', status: 200, allowDeleted: true },
  { method: 'post', path: '/api/v1/feedback', status: 201, body: { message: 'from mallory' } },
  { method: 'get', path: '/api/v1/admin/users', status: 403, admin: true },
  { method: 'get', path: '/api/v1/admin/audit', status: 403, admin: true },
  // Last: it soft-deletes the caller.
  { method: 'delete', path: '/api/v1/account/me', status: 202 },
];

/** Routes declared by the controllers, read from Nest's metadata, so a new route cannot be forgotten here. */
function declaredRoutes(): string[] {
  const controllers: Type[] = [MeController, AccountController, FeedbackController, AdminDirectoryController];
  return controllers.flatMap((controller) => {
    const prefix = String(Reflect.getMetadata(PATH_METADATA, controller));
    return Object.getOwnPropertyNames(controller.prototype)
      .filter((name) => name !== 'constructor')
      .map((name) => controller.prototype[name] as object)
      .filter((handler) => Reflect.getMetadata(PATH_METADATA, handler) !== undefined)
      .map((handler) => {
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number].toLowerCase();
        const path = String(Reflect.getMetadata(PATH_METADATA, handler)).replace(/^\/$/, '');
        return `${method} /api/v1/${prefix}${path ? `/${path}` : ''}`;
      });
  });
}

describe("no route leaks or touches another user's data", () => {
  let env: TestEnv;
  let api: ApiApp;
  let alice: SeededUser;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    alice = await seedUserWithEverything(api.prisma, 'user_alice', 'alice@example.com');
    const aliceAuth = await api.bearer('user_alice', 'alice@example.com');
    await api.http.post('/api/v1/account/me/signup-metadata').set('Authorization', aliceAuth).send({
      utm_source: 'alice-source',
    });
    await api.http
      .patch('/api/v1/me')
      .set('Authorization', aliceAuth)
      .send({ marketing_consent_given: true });
  });
  afterAll(() => env.close());

  const call = (route: Route, authorization?: string) => {
    const req = api.http[route.method](route.path);
    if (authorization) req.set('Authorization', authorization);
    return route.body ? req.send(route.body) : req;
  };

  it('walks every declared route', () => {
    expect(ROUTES.map((r) => `${r.method} ${r.path}`).sort()).toEqual(declaredRoutes().sort());
  });

  it("answers a second user with their own data only and leaves the first user's untouched", async () => {
    const markers = [
      alice.user.id,
      'user_alice',
      'alice@example.com',
      'alice-source',
      ...Object.values(alice.ids),
    ];
    const snapshot = async () => ({
      user: await api.prisma.user.findUniqueOrThrow({ where: { id: alice.user.id } }),
      feedback: await api.prisma.feedback.count({ where: { userId: alice.user.id } }),
      consent: await api.prisma.emailConsentEvent.count({ where: { userId: alice.user.id } }),
    });
    const before = await snapshot();
    const mallory = await api.bearer('user_mallory', 'mallory@example.com');
    for (const route of ROUTES) {
      const res = await call(route, mallory);
      // Precise statuses: a route that failed for mallory (4xx) would prove nothing about alice's data.
      expect({ route: `${route.method} ${route.path}`, status: res.status }).toEqual({
        route: `${route.method} ${route.path}`,
        status: route.status,
      });
      const text = typeof res.text === 'string' ? res.text : JSON.stringify(res.body);
      for (const marker of markers)
        expect({ route: route.path, leaked: text.includes(marker) }).toEqual({
          route: route.path,
          leaked: false,
        });
    }
    expect(await snapshot()).toEqual(before);
    const malloryRow = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_mallory' } });
    expect(malloryRow).toMatchObject({ utmSource: 'mallory', locale: 'fr' });
    expect(malloryRow.deletedAt).not.toBeNull();
  });

  it('refuses bodies that try to name another owner', async () => {
    const eve = await api.bearer('user_eve', 'eve@example.com');
    const attempts: Route[] = [
      { method: 'patch', path: '/api/v1/me', status: 400, body: { id: alice.user.id, locale: 'fr' } },
      {
        method: 'post',
        path: '/api/v1/account/me/signup-metadata',
        status: 400,
        body: { user_id: alice.user.id },
      },
      {
        method: 'post',
        path: '/api/v1/feedback',
        status: 400,
        body: { message: 'x', user_id: alice.user.id },
      },
    ];
    for (const route of attempts) expect((await call(route, eve)).status).toBe(route.status);
  });

  it('answers 401 problem+json on every route without a token', async () => {
    for (const route of ROUTES) {
      const res = await call(route);
      expect({ route: route.path, status: res.status }).toEqual({ route: route.path, status: 401 });
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.body).toMatchObject({
        status: 401,
        code: 'unauthenticated',
        request_id: expect.any(String),
      });
    }
  });

  it('answers 403 account_deleted to a soft-deleted user except on the allowed routes', async () => {
    const authorization = await api.bearer('user_gone', 'gone@example.com');
    await api.http.get('/api/v1/me').set('Authorization', authorization);
    await api.prisma.user.update({ where: { identityUserId: 'user_gone' }, data: { deletedAt: new Date() } });
    for (const route of ROUTES.filter((r) => r.method !== 'post' || !r.path.endsWith('/restore'))) {
      const res = await call(route, authorization);
      if (route.allowDeleted) {
        expect({ route: route.path, status: res.status }).toEqual({ route: route.path, status: 200 });
      } else {
        expect({ route: route.path, status: res.status }).toEqual({ route: route.path, status: 403 });
        expect(res.body).toMatchObject({ status: 403, code: 'account_deleted' });
      }
    }
  });

  it('answers 404 problem+json for paths that do not exist', async () => {
    const authorization = await api.bearer('user_lost', 'lost@example.com');
    for (const path of ['/api/v1/account/me/nothing', '/api/v1/me/extra', '/api/v1/admin/users/x/y']) {
      const res = await api.http.get(path).set('Authorization', authorization);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 404, code: 'not_found' });
    }
  });
});
