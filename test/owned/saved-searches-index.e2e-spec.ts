import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { type ApiApp, TestEnv } from '../support/test-env.js';
import { type CapturedQuery, captureSql } from './owned-helpers.js';

const USERS = 1000;
const ROWS_PER_USER = 100;
const INDEX = 'saved_searches_user_id_created_at_idx';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/**
 * Issue requirement 4: with 100k rows over 1,000 users, the list page and its count read the caller's
 * rows through the (user_id, created_at) index and never scan the table. The SQL under test is the SQL
 * the repository sent (captured at the pool), not a hand-written copy.
 */
describe('saved-search list queries on 100k rows', () => {
  let env: TestEnv;
  let api: ApiApp;
  let db: pg.Client;
  let page: CapturedQuery;
  let count: CapturedQuery;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    db = new pg.Client({ connectionString: env.db.url });
    await db.connect();
    await db.query(
      `INSERT INTO users (id, identity_user_id, email)
       SELECT gen_random_uuid(), 'bulk_' || g, 'bulk_' || g || '@example.com' FROM generate_series(1, $1::int) g`,
      [USERS],
    );
    await db.query(
      `INSERT INTO saved_searches (id, user_id, name, query, created_at, updated_at)
       SELECT gen_random_uuid(), u.id, 'search ' || g, 'q', now() - g * interval '1 minute', now()
       FROM users u CROSS JOIN generate_series(1, $1::int) g
       WHERE u.identity_user_id LIKE 'bulk\\_%'`,
      [ROWS_PER_USER],
    );
    await db.query('ANALYZE users');
    await db.query('ANALYZE saved_searches');

    const capture = captureSql(api.prisma.pool);
    try {
      const res = await api.http
        .get('/api/v1/saved_searches?page=2&page_size=30')
        .set('Authorization', await api.bearer('bulk_500'));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ total: ROWS_PER_USER, page: 2, page_size: 30 });
      expect(res.body.items).toHaveLength(30);
      const queries = capture.matching(/"saved_searches"/);
      page = queries.find((q) => /ORDER BY/i.test(q.text))!;
      count = queries.find((q) => /COUNT\(/i.test(q.text))!;
    } finally {
      capture.restore();
    }
  }, 60_000);

  afterAll(async () => {
    await db?.end();
    await env.close();
  });

  const explain = async (query: CapturedQuery): Promise<PlanNode[]> => {
    const { rows } = await db.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${query.text}`,
      query.values as unknown[],
    );
    return nodes((rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan);
  };

  const expectIndexedAndNoSeqScan = (plan: PlanNode[]) => {
    expect(plan.filter((node) => node['Node Type'] === 'Seq Scan')).toEqual([]);
    const scans = plan.filter((node) => node['Index Name'] === INDEX);
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      expect(['Index Scan', 'Index Only Scan', 'Bitmap Index Scan']).toContain(scan['Node Type']);
    }
    return scans;
  };

  it('captured the page query and the count query the repository issued', () => {
    expect(page?.text).toMatch(/ORDER BY .*"created_at" DESC.*"id" DESC/i);
    expect(page.text).toMatch(/"user_id" = \$1/);
    expect(count?.text).toMatch(/"user_id" = \$1/);
  });

  it("reads the page through the (user_id, created_at) index, touching only the caller's rows", async () => {
    const scans = expectIndexedAndNoSeqScan(await explain(page));
    // Newest first means walking the index backwards and stopping after offset + limit rows.
    for (const scan of scans)
      expect(scan['Actual Rows']! * (scan['Actual Loops'] ?? 1)).toBeLessThanOrEqual(ROWS_PER_USER);
  });

  it("counts through the same index without reading other users' rows", async () => {
    const scans = expectIndexedAndNoSeqScan(await explain(count));
    for (const scan of scans) {
      expect(scan['Actual Rows']).toBe(ROWS_PER_USER);
      expect(scan['Rows Removed by Filter'] ?? 0).toBe(0);
    }
  });
});
