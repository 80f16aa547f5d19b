import { describe, expect, it } from '@jest/globals';
// @ts-expect-error plain ESM script without type declarations
import { check, status } from '../../scripts/migrate.mjs';

describe('migrations', () => {
  it('schema.prisma and prisma/migrations agree (no missing migration)', async () => {
    const result = (await check({})) as { ok: boolean; sql: string };
    expect(result.sql).toBe('');
    expect(result.ok).toBe(true);
  });

  it('the test template database has every migration applied and none failed', async () => {
    const url = `${process.env.TEST_PG_SERVER_URL}/${process.env.TEST_DB_TEMPLATE}`;
    const result = (await status({ databaseUrl: url })) as {
      ok: boolean;
      pending: string[];
      failed: unknown[];
    };
    expect(result.pending).toEqual([]);
    expect(result.failed).toEqual([]);
    expect(result.ok).toBe(true);
  });
});
