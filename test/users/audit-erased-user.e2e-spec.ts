import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Db } from '../../src/infra/prisma/prisma.service.js';
import { AuditRepository, type AuditRow } from '../../src/modules/audit/audit.repository.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/**
 * audit_logs.user_id references users.identity_user_id. An audit write made outside a transaction (the
 * export's `user.exported`, the admin guard's `admin.unauthorized`) for a user the hard delete erases at
 * that moment used to fail on the foreign key and answer 500. Here the user row is deleted right before
 * the write: the request answers as usual and the entry is kept as the erasure would leave it.
 */
describe('audit entries for a user erased just before the write', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());
  afterEach(() => {
    jest.restoreAllMocks();
  });

  /** Deletes the user (as the hard delete would) when the entry with this action is about to be written. */
  const eraseBeforeAuditOf = (action: string, identityUserId: string) => {
    const repository = api.app.get(AuditRepository);
    const insert = repository.insert.bind(repository);
    const erasing = async (db: Db, data: AuditRow) => {
      if (data.action === action && data.userId === identityUserId) {
        await api.prisma.user.deleteMany({ where: { identityUserId } });
      }
      return insert(db, data);
    };
    jest.spyOn(repository, 'insert').mockImplementation(erasing as unknown as typeof repository.insert);
  };

  const signedIn = async (sub: string) => {
    const authorization = await api.bearer(sub, `${sub}@example.com`);
    expect((await api.http.get('/api/v1/me').set('Authorization', authorization)).status).toBe(200);
    return authorization;
  };

  const entriesOf = (action: string, sub: string) =>
    api.prisma.auditLog.findMany({ where: { action, actor: `user:${sub}` } });

  it('the export still answers 200 and keeps user.exported with a null user link', async () => {
    const authorization = await signedIn('user_race_export');
    eraseBeforeAuditOf('user.exported', 'user_race_export');
    const res = await api.http.get('/api/v1/account/me/export').set('Authorization', authorization);
    expect(res.status).toBe(200);
    expect(await api.prisma.user.count({ where: { identityUserId: 'user_race_export' } })).toBe(0);
    expect(await entriesOf('user.exported', 'user_race_export')).toEqual([
      expect.objectContaining({ actor: 'user:user_race_export', userId: null, resourceType: 'user' }),
    ]);
  });

  it('the admin guard still answers 403 admin_required and keeps admin.unauthorized', async () => {
    const authorization = await signedIn('user_race_admin');
    eraseBeforeAuditOf('admin.unauthorized', 'user_race_admin');
    const res = await api.http.get('/api/v1/admin/users').set('Authorization', authorization);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'admin_required' });
    expect(await api.prisma.user.count({ where: { identityUserId: 'user_race_admin' } })).toBe(0);
    expect(await entriesOf('admin.unauthorized', 'user_race_admin')).toEqual([
      expect.objectContaining({ actor: 'user:user_race_admin', userId: null, resourceType: 'route' }),
    ]);
  });
});
