import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EXPORT_SECTIONS } from '../../src/modules/users/account-export.repository.js';
import { AccountExportService } from '../../src/modules/users/account-export.service.js';
import { type SeededUser, seedUserWithEverything } from '../factories/user-data.factory.js';
import { captureSql } from '../support/sql-capture.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

type Bundle = Record<string, unknown> & { user: Record<string, unknown> };

describe('GET /api/v1/account/me/export', () => {
  let env: TestEnv;
  let api: ApiApp;
  let alice: SeededUser;
  let bob: SeededUser;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    alice = await seedUserWithEverything(api.prisma, 'user_alice');
    bob = await seedUserWithEverything(api.prisma, 'user_bob');
  });
  afterAll(() => env.close());

  const exportAs = async (sub: string) =>
    api.http
      .get('/api/v1/account/me/export')
      .set('Authorization', await api.bearer(sub, `${sub}@example.com`))
      .buffer(true)
      .parse((res, callback) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => callback(null, text));
      });

  const sectionNames = EXPORT_SECTIONS.map((s) => s.name);
  const ids = (bundle: Bundle, section: string) => (bundle[section] as { id: string }[]).map((row) => row.id);

  it('answers one JSON attachment with the profile, every user-linked table and the audit entries', async () => {
    const res = await exportAs('user_alice');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-disposition']).toMatch(
      /^attachment; filename="account-export-\d{4}-\d{2}-\d{2}\.json"$/,
    );
    expect(res.headers['cache-control']).toBe('no-store');
    const bundle = JSON.parse(res.body as string) as Bundle;
    expect(Object.keys(bundle)).toEqual(['generated_at', 'user', 'credits', ...sectionNames]);
    for (const key of [
      'subscriptions',
      'credit_transactions',
      'saved_searches',
      'workspaces',
      'api_keys',
      'feedback',
      'broadcast_recipients',
      'audit_logs',
    ]) {
      expect(sectionNames).toContain(key);
    }
    expect(bundle.user).toMatchObject({
      id: alice.user.id,
      identity_user_id: 'user_alice',
      email: 'user_alice@example.com',
      current_tier: 'FREE',
      credit_balance: 100,
    });
    for (const [section, id] of Object.entries(alice.ids)) {
      if (section === 'broadcast_runs') continue;
      expect(ids(bundle, section)).toContain(id);
    }
    expect((bundle.saved_searches as Record<string, unknown>[])[0]).toMatchObject({
      user_id: alice.user.id,
      query: 'q',
      filters: { a: 1 },
    });
    expect((bundle.broadcast_recipients as Record<string, unknown>[])[0]).toMatchObject({
      status: 'sent',
      template_key: 'newsletter',
    });
    // The export itself is audited, and that entry is part of the bundle.
    expect((bundle.audit_logs as { action: string }[]).map((a) => a.action)).toContain('user.exported');
  });

  it('never includes API key secrets or stored e-mail bodies', async () => {
    const res = await exportAs('user_alice');
    const bundle = JSON.parse(res.body as string) as Bundle;
    const [key] = bundle.api_keys as Record<string, unknown>[];
    expect(Object.keys(key).sort()).toEqual(
      ['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'prefix', 'revoked_at', 'updated_at'].sort(),
    );
    expect(res.body).not.toContain(alice.apiKeySecretHash);
    expect(res.body).not.toMatch(/secret/i);
    const [message] = bundle.email_messages as Record<string, unknown>[];
    expect(message).not.toHaveProperty('html');
    expect(message).not.toHaveProperty('text');
  });

  it('exports a broadcast whose outcome is not recorded as pending, without the batch key', async () => {
    const run = await api.prisma.broadcastRun.findFirstOrThrow({ where: { id: alice.ids.broadcast_runs } });
    const pending = await api.prisma.broadcastRun.create({
      data: { templateKey: run.templateKey, kind: run.kind, createdBy: 'user:user_admin', status: 'failed' },
    });
    const row = await api.prisma.broadcastRecipient.create({
      data: {
        runId: pending.id,
        userId: alice.user.id,
        status: 'pending',
        batchKey: `broadcast/${pending.id}/batch-x`,
      },
    });
    const bundle = JSON.parse((await exportAs('user_alice')).body as string) as Bundle;
    const exported = (bundle.broadcast_recipients as Record<string, unknown>[]).find((r) => r.id === row.id);
    expect(exported).toMatchObject({ status: 'pending', template_key: run.templateKey });
    expect(exported).not.toHaveProperty('batch_key');
    await api.prisma.broadcastRun.delete({ where: { id: pending.id } });
  });

  it("holds nothing of another user's", async () => {
    const res = await exportAs('user_bob');
    const text = res.body as string;
    const bundle = JSON.parse(text) as Bundle;
    expect(bundle.user.id).toBe(bob.user.id);
    for (const [section, id] of Object.entries(alice.ids)) {
      expect(text).not.toContain(id);
      if (section !== 'broadcast_runs') expect(ids(bundle, section)).toContain(bob.ids[section]);
    }
    expect(text).not.toContain('user_alice');
    expect(text).not.toContain(alice.user.id);
  });

  it('covers every table with a foreign key to users', async () => {
    const rows = await api.prisma.$queryRaw<{ table: string }[]>`
      SELECT DISTINCT conrelid::regclass::text AS table FROM pg_constraint
      WHERE contype = 'f' AND confrelid = 'users'::regclass`;
    expect(rows.length).toBeGreaterThan(5);
    for (const { table } of rows) expect(sectionNames).toContain(table);
  });

  it('streams a user with many rows completely, page by page', async () => {
    await api.http
      .get('/api/v1/me')
      .set('Authorization', await api.bearer('user_heavy', 'user_heavy@example.com'));
    const heavy = await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_heavy' } });
    const rows = 6000;
    // Many rows share one created_at, so the keyset must break ties on id.
    await api.prisma.$executeRaw`
      INSERT INTO credit_transactions (id, user_id, delta, kind, job_id, created_at)
      SELECT gen_random_uuid(), ${heavy.id}::uuid, 1, 'grant', 'heavy-' || n,
             timestamp '2026-01-01' + (n / 7) * interval '1 second'
      FROM generate_series(1, ${rows}) AS n`;
    const service = api.app.get(AccountExportService);
    const pageSize = service.pageSize;
    service.pageSize = 250;
    const sql = captureSql(api.prisma.pool);
    try {
      const res = await exportAs('user_heavy');
      expect(res.status).toBe(200);
      // Streamed: no Content-Length, chunked transfer.
      expect(res.headers['content-length']).toBeUndefined();
      expect(res.headers['transfer-encoding']).toBe('chunked');
      const bundle = JSON.parse(res.body as string) as Bundle;
      const credits = bundle.credit_transactions as { id: string; job_id: string; created_at: string }[];
      expect(credits).toHaveLength(rows);
      expect(new Set(credits.map((c) => c.id)).size).toBe(rows);
      expect(new Set(credits.map((c) => c.job_id)).size).toBe(rows);
      const times = credits.map((c) => Date.parse(c.created_at));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      // Paged, not loaded in one query: one SELECT per page of 250 plus the empty one that ends the table,
      // each with LIMIT 250, continuing after the previous page's last (created_at, id) rather than by
      // OFFSET.
      const pages = sql.matching(/^SELECT .* FROM "public"\."credit_transactions"/);
      expect(pages).toHaveLength(rows / 250 + 1);
      const bound = (text: string, values: unknown[], clause: 'LIMIT' | 'OFFSET') => {
        // A bound parameter (what Prisma sends today) or a literal.
        const match = new RegExp(`${clause} (?:\\$(\\d+)|(\\d+))`).exec(text);
        if (!match) return undefined;
        return Number(match[1] ? values[Number(match[1]) - 1] : match[2]);
      };
      for (const [index, { text, values }] of pages.entries()) {
        expect({ page: index, limit: bound(text, values, 'LIMIT') }).toEqual({ page: index, limit: 250 });
        expect(bound(text, values, 'OFFSET') ?? 0).toBe(0);
        expect(values).toContain(heavy.id);
        expect(/"created_at" > \$\d+/.test(text)).toBe(index > 0);
      }
    } finally {
      sql.restore();
      service.pageSize = pageSize;
    }
  });

  it('is available to a soft-deleted user during the grace period', async () => {
    await api.http
      .get('/api/v1/me')
      .set('Authorization', await api.bearer('user_leaving', 'user_leaving@example.com'));
    await api.prisma.user.update({
      where: { identityUserId: 'user_leaving' },
      data: { deletedAt: new Date() },
    });
    const res = await exportAs('user_leaving');
    expect(res.status).toBe(200);
    expect((JSON.parse(res.body as string) as Bundle).user.deleted_at).not.toBeNull();
  });
});
