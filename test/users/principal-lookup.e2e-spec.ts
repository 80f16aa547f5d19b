import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UsersRepository } from '../../src/modules/users/users.repository.js';
import { captureSql } from '../support/sql-capture.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

// Issue 15 item 6: the principal of every authenticated request is read on the driver, not through
// Prisma's client. The row it returns must be the one Prisma returns, field for field and type for type
// (dates as Date, numbers as number), or every consumer of `principal.user` would change behaviour.

describe('principal lookup on the driver', () => {
  let env: TestEnv;
  let api: ApiApp;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
  });
  afterAll(() => env.close());

  it('returns what Prisma returns for a row with every column set, and null for an unknown identity', async () => {
    const at = (iso: string) => new Date(iso);
    const created = await api.prisma.user.create({
      data: {
        identityUserId: 'user_every_column',
        email: 'every@example.com',
        emailVerified: true,
        identityUpdatedAt: at('2026-01-02T03:04:05.678Z'),
        currentTier: 'TEAM',
        creditBalance: 42,
        purchasedCredits: 7,
        planGrantJobId: 'first-period:sub_1',
        planGrantStartsAt: at('2026-02-01T00:00:00.000Z'),
        planExpiresAt: at('2026-03-01T00:00:00.000Z'),
        planCarriedCredits: 3,
        planPeriodJobId: 'first-period:sub_1',
        marketingConsentGiven: true,
        marketingConsentAt: at('2026-01-05T00:00:00.001Z'),
        marketingConsentSource: 'signup_form',
        locale: 'de',
        utmSource: 's',
        utmMedium: 'm',
        utmCampaign: 'c',
        utmTerm: 't',
        utmContent: 'x',
        referrer: 'https://ref.example.com',
        landingPage: '/pricing',
        provenance: 'lead:guide',
        attributionRecordedAt: at('2026-01-06T00:00:00.000Z'),
        emailDisposable: true,
        billingCustomerId: 'ctm_1',
        lastActiveAt: at('2026-01-07T00:00:00.000Z'),
        deletedAt: at('2026-01-08T00:00:00.000Z'),
        deletedVia: 'api',
        adminEmail: 'every@example.com',
        adminGrantedAt: at('2026-01-09T00:00:00.000Z'),
      },
    });
    // No column is left at null: a column missing from the driver's select list would show as a difference.
    expect(Object.entries(created).filter(([, value]) => value === null)).toEqual([]);

    const repository = api.app.get(UsersRepository);
    const viaDriver = await repository.findPrincipal(api.prisma, 'user_every_column');
    const viaPrisma = await api.prisma.user.findUnique({ where: { identityUserId: 'user_every_column' } });
    expect(viaDriver).toStrictEqual(viaPrisma);
    expect(Object.keys(viaDriver!)).toEqual(Object.keys(viaPrisma!));
    expect(await repository.findPrincipal(api.prisma, 'user_nobody')).toBeNull();
  });

  it('an authenticated request reads its principal with the one driver statement', async () => {
    const authorization = await api.bearer('user_principal_sql');
    expect((await api.http.get('/api/v1/me').set('Authorization', authorization)).status).toBe(200);
    const sql = captureSql(api.prisma.pool);
    try {
      expect((await api.http.get('/api/v1/me').set('Authorization', authorization)).status).toBe(200);
      const lookups = sql.matching(/FROM users WHERE identity_user_id = \$1/);
      expect(lookups).toHaveLength(1);
      expect(lookups[0].values).toEqual(['user_principal_sql']);
    } finally {
      sql.restore();
    }
  });

  it('asks the identity deletion guard only for a missing row: a known user never reads the webhook archive', async () => {
    const sql = captureSql(api.prisma.pool, { transactions: true });
    const guard = () => sql.matching(/FROM webhook_events\s+WHERE .*event_type = 'user\.deleted'/s);
    // The identity's lock (against a user.deleted applied meanwhile): on the just-in-time path only.
    const identityLock = () => sql.matching(/pg_advisory_xact_lock/);
    try {
      const authorization = await api.bearer('user_guard_once');
      // The first request creates the user just in time, after asking the guard (inside its transaction).
      expect((await api.http.get('/api/v1/me').set('Authorization', authorization)).status).toBe(200);
      expect(guard()).toHaveLength(1);
      expect(guard()[0].values).toContain('user_guard_once');
      expect(identityLock().map((statement) => statement.values)).toEqual([
        ['identity-user:user_guard_once'],
      ]);
      sql.clear();
      expect((await api.http.get('/api/v1/me').set('Authorization', authorization)).status).toBe(200);
      expect(guard()).toEqual([]);
      expect(identityLock()).toEqual([]);
    } finally {
      sql.restore();
    }
  });
});
