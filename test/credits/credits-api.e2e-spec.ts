import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UnitOfWork } from '../../src/infra/prisma/unit-of-work.js';
import { CreditsRepository } from '../../src/modules/credits/credits.repository.js';
import { CREDIT_KINDS, CreditsService } from '../../src/modules/credits/credits.service.js';
import { expectLedgerConsistent, grantCredits } from '../support/credits.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

describe('GET /api/v1/credits', () => {
  let env: TestEnv;
  let api: ApiApp;
  let auth: string;
  let userId: string;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    auth = await api.bearer('user_ledger_reader');
    const other = await api.bearer('user_ledger_other');
    await api.http.get('/api/v1/credits').set('Authorization', auth).expect(200);
    await api.http.get('/api/v1/credits').set('Authorization', other).expect(200);
    const users = await api.prisma.user.findMany({ orderBy: { identityUserId: 'desc' } });
    userId = users.find((u) => u.identityUserId === 'user_ledger_reader')!.id;
    const otherId = users.find((u) => u.identityUserId === 'user_ledger_other')!.id;
    const credits = api.app.get(CreditsService);
    // 60 rows for the reader, one second apart so "newest first" is unambiguous; 3 for someone else.
    for (let i = 0; i < 60; i += 1) {
      await api.app
        .get(UnitOfWork)
        .run((tx) =>
          i % 3 === 2
            ? credits.deduct(tx, { userId, amount: 1, jobId: `job-${i}` })
            : credits.grant(tx, { userId, amount: 2, jobId: `job-${i}` }),
        );
      await api.prisma.creditTransaction.update({
        where: { jobId_kind: { jobId: `job-${i}`, kind: i % 3 === 2 ? 'spend' : 'grant' } },
        data: { createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)) },
      });
    }
    for (let i = 0; i < 3; i += 1) {
      await api.prisma.$transaction((tx) =>
        credits.grant(tx, { userId: otherId, amount: 5, jobId: `other-${i}`, kind: CREDIT_KINDS.grant }),
      );
    }
  });
  afterAll(async () => {
    await expectLedgerConsistent(api.prisma);
    await env.close();
  });

  const list = (query = '') => api.http.get(`/api/v1/credits${query}`).set('Authorization', auth);

  it('returns the balance and only the caller rows, newest first, 50 per page by default', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    // 40 grants of 2, 20 spends of 1.
    expect(res.body).toMatchObject({ balance: 60, total: 60, page: 1, page_size: 50 });
    expect(res.body.items).toHaveLength(50);
    expect(res.body.items[0]).toEqual({
      id: expect.any(String),
      delta: -1,
      kind: 'spend',
      job_id: 'job-59',
      created_at: '2026-01-01T00:00:59.000Z',
    });
    expect(res.body.items[1]).toMatchObject({ delta: 2, kind: 'grant', job_id: 'job-58' });
    const jobIds = res.body.items.map((item: { job_id: string }) => item.job_id);
    expect(jobIds).toEqual(Array.from({ length: 50 }, (_, i) => `job-${59 - i}`));
  });

  it('pages through the rest', async () => {
    const res = await list('?page=2&page_size=50');
    expect(res.body).toMatchObject({ page: 2, page_size: 50, total: 60 });
    expect(res.body.items.map((item: { job_id: string }) => item.job_id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `job-${9 - i}`),
    );
    expect((await list('?page=7&page_size=10')).body.items).toEqual([]);
  });

  it('normalises invalid paging like owned resources instead of refusing it', async () => {
    for (const [query, page, pageSize] of [
      ['?page=0', 1, 50],
      ['?page=-3&page_size=0', 1, 50],
      ['?page_size=201', 1, 50],
      ['?page_size=abc&page=xyz', 1, 50],
      ['?page_size=200', 1, 200],
      ['?page=2&page_size=1', 2, 1],
      ['?page=1.5&page_size=2.5', 1, 50],
    ] as const) {
      const res = await list(query);
      expect(res.status).toBe(200);
      expect({ page: res.body.page, page_size: res.body.page_size }).toEqual({ page, page_size: pageSize });
    }
    expect((await list('?page=2&page_size=1')).body.items[0].job_id).toBe('job-58');
  });

  it('shows a balance the listed rows explain, even when a grant commits between the reads', async () => {
    const racer = await api.bearer('user_ledger_racer');
    await api.http.get('/api/v1/credits').set('Authorization', racer).expect(200);
    const racerId = (
      await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_ledger_racer' } })
    ).id;
    await grantCredits(api, racerId, 10);
    // Force the interleaving: after the balance has been read, another request commits a grant, and
    // only then are the rows read. Separate reads would show balance 10 next to rows summing to 17.
    const repo = api.app.get(CreditsRepository);
    const original = { planState: repo.planState, page: repo.page };
    let balanceRead!: () => void;
    const afterBalance = new Promise<void>((resolve) => (balanceRead = resolve));
    let interleaved = false;
    // planState reads the balance with its purchased part (issue 18).
    repo.planState = async function (this: CreditsRepository, ...args) {
      const result = await original.planState.apply(this, args);
      balanceRead();
      return result;
    };
    repo.page = async function (this: CreditsRepository, ...args) {
      await afterBalance;
      if (!interleaved) {
        interleaved = true;
        await grantCredits(api, racerId, 7);
      }
      return original.page.apply(this, args);
    };
    let res;
    try {
      res = await api.http.get('/api/v1/credits').set('Authorization', racer);
    } finally {
      Object.assign(repo, original);
    }
    expect(interleaved).toBe(true);
    expect(res.status).toBe(200);
    const listed = (res.body.items as { delta: number }[]).reduce((sum, item) => sum + item.delta, 0);
    expect(res.body).toMatchObject({ balance: 10, total: 1 });
    expect(listed).toBe(res.body.balance);
    // The next read shows both.
    expect((await api.http.get('/api/v1/credits').set('Authorization', racer)).body).toMatchObject({
      balance: 17,
      total: 2,
    });
  });

  it('refuses unknown query parameters and anonymous callers', async () => {
    expect((await list('?user_id=someone')).status).toBe(400);
    expect((await api.http.get('/api/v1/credits')).status).toBe(401);
  });
});
