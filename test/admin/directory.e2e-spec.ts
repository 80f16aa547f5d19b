import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { expectUnreadableInstant, ISO_FORMS_DATE_CANNOT_READ } from '../support/instants.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('admin directory: GET /admin/users and /admin/audit', () => {
  let env: TestEnv;
  let api: ApiApp;
  let admin: string;
  const base = Date.parse('2026-06-01T00:00:00.000Z');

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    admin = await api.bearer('user_admin', 'admin@example.com');
    // 120 bulk users on their own domain, one minute apart (newest = bulk119).
    await api.prisma.user.createMany({
      data: Array.from({ length: 120 }, (_, i) => ({
        identityUserId: `user_bulk_${i}`,
        email: `bulk${String(i).padStart(3, '0')}@bulk.example`,
        createdAt: new Date(base + i * 60_000),
      })),
    });
    await api.prisma.user.createMany({
      data: [
        { identityUserId: 'user_alpha', email: 'Alpha.One@Example.org', currentTier: 'PRO' },
        { identityUserId: 'user_alpha2', email: 'alpha.two@example.org', currentTier: 'TEAM' },
        { identityUserId: 'user_ab', email: 'ab@wild.example' },
        { identityUserId: 'user_a_b', email: 'a_b@wild.example', billingCustomerId: 'ctm_secretish' },
        { identityUserId: 'user_pct', email: 'x%y@wild.example', currentTier: 'PRO', deletedAt: new Date() },
      ],
    });
  });
  afterAll(() => env.close());

  const get = (path: string, authorization = admin) => api.http.get(path).set('Authorization', authorization);

  describe('access', () => {
    it('answers 401 without a token', async () => {
      for (const path of ['/api/v1/admin/users', '/api/v1/admin/audit']) {
        const res = await api.http.get(path);
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ status: 401, code: 'unauthenticated' });
      }
    });

    it('answers 403 to non-admins, before validation, and audits the attempt', async () => {
      const plain = await api.bearer('user_plain', 'plain@example.com');
      for (const path of ['/api/v1/admin/users?page_size=1000', '/api/v1/admin/audit']) {
        const res = await get(path, plain);
        expect(res.status).toBe(403);
        expect(res.body).toMatchObject({ code: 'admin_required' });
      }
      expect(
        await api.prisma.auditLog.count({ where: { action: 'admin.unauthorized', userId: 'user_plain' } }),
      ).toBe(2);
    });
  });

  describe('GET /admin/users', () => {
    it('pages newest first with a default page size of 50', async () => {
      const res = await get('/api/v1/admin/users?search=bulk');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ total: 120, page: 1, page_size: 50 });
      expect(res.body.items).toHaveLength(50);
      expect(res.body.items[0].email).toBe('bulk119@bulk.example');
      const page3 = await get('/api/v1/admin/users?search=bulk&page=3&page_size=50');
      expect(page3.body.items.map((u: { email: string }) => u.email)).toEqual(
        Array.from({ length: 20 }, (_, i) => `bulk${String(19 - i).padStart(3, '0')}@bulk.example`),
      );
    });

    it('allows page_size 100 and rejects 101 by validation (not clamped)', async () => {
      const ok = await get('/api/v1/admin/users?page_size=100');
      expect(ok.status).toBe(200);
      expect(ok.body.items).toHaveLength(100);
      const tooBig = await get('/api/v1/admin/users?page_size=101');
      expect(tooBig.status).toBe(400);
      expect(tooBig.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(tooBig.body.code).toBe('validation_failed');
      expect(tooBig.body.errors.map((e: { field: string }) => e.field)).toContain('page_size');
    });

    it.each([
      'page_size=0',
      'page_size=-5',
      'page_size=abc',
      'page_size=10.5',
      'page=0',
      'page=x',
      'unknown=1',
    ])('rejects %s with 400', async (query) => {
      expect((await get(`/api/v1/admin/users?${query}`)).status).toBe(400);
    });

    it('searches by e-mail prefix, case-insensitively, with wildcards taken literally', async () => {
      const emails = async (search: string) =>
        (await get(`/api/v1/admin/users?search=${encodeURIComponent(search)}`)).body.items
          .map((u: { email: string }) => u.email)
          .sort();
      expect(await emails('ALPHA.')).toEqual(['Alpha.One@Example.org', 'alpha.two@example.org']);
      expect(await emails('a_')).toEqual(['a_b@wild.example']);
      expect(await emails('x%')).toEqual(['x%y@wild.example']);
      expect(await emails('example.org')).toEqual([]);
    });

    it('filters by tier and by deletion state', async () => {
      const pro = await get('/api/v1/admin/users?tier=PRO');
      expect(pro.body.items.map((u: { identity_user_id: string }) => u.identity_user_id).sort()).toEqual([
        'user_alpha',
        'user_pct',
      ]);
      const deleted = await get('/api/v1/admin/users?deleted=true');
      expect(deleted.body).toMatchObject({ total: 1 });
      expect(deleted.body.items[0].identity_user_id).toBe('user_pct');
      expect(deleted.body.items[0].deleted_at).not.toBeNull();
      const activePro = await get('/api/v1/admin/users?tier=PRO&deleted=false');
      expect(activePro.body.items.map((u: { identity_user_id: string }) => u.identity_user_id)).toEqual([
        'user_alpha',
      ]);
      expect((await get('/api/v1/admin/users?tier=GOLD')).status).toBe(400);
      expect((await get('/api/v1/admin/users?deleted=maybe')).status).toBe(400);
    });

    it('lists profile fields only, never secrets or billing identifiers', async () => {
      const res = await get('/api/v1/admin/users?search=a_b');
      expect(Object.keys(res.body.items[0]).sort()).toEqual(
        [
          'id',
          'identity_user_id',
          'email',
          'current_tier',
          'credit_balance',
          'marketing_consent_given',
          'locale',
          'email_disposable',
          'provenance',
          'utm_source',
          'utm_medium',
          'utm_campaign',
          'created_at',
          'last_active_at',
          'deleted_at',
        ].sort(),
      );
      expect(JSON.stringify(res.body)).not.toContain('ctm_secretish');
    });
  });

  describe('GET /admin/audit', () => {
    const at = (minutes: number) => new Date(base + minutes * 60_000);

    beforeAll(async () => {
      await api.prisma.auditLog.createMany({
        data: [
          ...Array.from({ length: 210 }, (_, i) => ({
            actor: 'system:bulk',
            action: 'bulk.entry',
            resourceType: 'bulk',
            resourceId: `bulk-${i}`,
            createdAt: at(i),
          })),
          {
            actor: 'user:user_alpha',
            action: 'saved_search.created',
            userId: 'user_alpha',
            resourceType: 'saved_search',
            createdAt: at(1000),
          },
          {
            actor: 'user:user_alpha',
            action: 'saved_search.deleted',
            userId: 'user_alpha',
            resourceType: 'saved_search',
            createdAt: at(1001),
          },
          {
            actor: 'webhook:billing',
            action: 'subscription.created',
            userId: 'user_alpha2',
            resourceType: 'subscription',
            details: { tier: 'TEAM' },
            createdAt: at(1002),
          },
        ],
      });
    });

    it('pages newest first; page_size 200 allowed, 201 rejected', async () => {
      const ok = await get('/api/v1/admin/audit?action=bulk.entry&page_size=200');
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ total: 210, page: 1, page_size: 200 });
      expect(ok.body.items).toHaveLength(200);
      expect(ok.body.items[0].resource_id).toBe('bulk-209');
      expect(ok.body.items[199].resource_id).toBe('bulk-10');
      const page2 = await get('/api/v1/admin/audit?action=bulk.entry&page_size=200&page=2');
      expect(page2.body.items.map((e: { resource_id: string }) => e.resource_id)).toEqual(
        Array.from({ length: 10 }, (_, i) => `bulk-${9 - i}`),
      );
      const tooBig = await get('/api/v1/admin/audit?page_size=201');
      expect(tooBig.status).toBe(400);
      expect(tooBig.body.errors.map((e: { field: string }) => e.field)).toContain('page_size');
    });

    it('filters by action, actor, user, resource type and time range', async () => {
      const ids = async (query: string) =>
        (await get(`/api/v1/admin/audit?${query}`)).body.items.map((e: { action: string }) => e.action);
      expect(await ids('user_id=user_alpha')).toEqual(['saved_search.deleted', 'saved_search.created']);
      expect(await ids('actor=webhook:billing')).toEqual(['subscription.created']);
      expect(await ids('resource_type=saved_search&action=saved_search.created')).toEqual([
        'saved_search.created',
      ]);
      const range = await get(
        `/api/v1/admin/audit?from=${at(1000).toISOString()}&to=${at(1001).toISOString()}`,
      );
      expect(range.body.items.map((e: { action: string }) => e.action)).toEqual([
        'saved_search.deleted',
        'saved_search.created',
      ]);
      const bulkRange = await get(
        `/api/v1/admin/audit?action=bulk.entry&from=${at(5).toISOString()}&to=${at(9).toISOString()}`,
      );
      expect(bulkRange.body.total).toBe(5);
    });

    it('answers the documented item shape', async () => {
      const res = await get('/api/v1/admin/audit?actor=webhook:billing');
      expect(res.body.items[0]).toEqual({
        id: expect.any(String),
        actor: 'webhook:billing',
        action: 'subscription.created',
        user_id: 'user_alpha2',
        resource_type: 'subscription',
        resource_id: null,
        details: { tier: 'TEAM' },
        request_id: null,
        created_at: at(1002).toISOString(),
      });
    });

    it.each(['from=yesterday', 'to=2026-13-01', 'page_size=0', 'page=0', 'user=x'])(
      'rejects %s with 400',
      async (query) => {
        expect((await get(`/api/v1/admin/audit?${query}`)).status).toBe(400);
      },
    );

    it.each(ISO_FORMS_DATE_CANNOT_READ)(
      'rejects from=%s, ISO 8601 that Date cannot read, with 400 naming it',
      async (from) => {
        expectUnreadableInstant(await get(`/api/v1/admin/audit?from=${encodeURIComponent(from)}`), 'from');
      },
    );

    it('rejects a range whose start is after its end', async () => {
      const res = await get(`/api/v1/admin/audit?from=${at(10).toISOString()}&to=${at(5).toISOString()}`);
      expect(res.status).toBe(400);
    });
  });
});
