import type pg from 'pg';

export interface CapturedQuery {
  text: string;
  values: unknown[];
}

/**
 * Records the SQL that Prisma sends through the pool outside transactions (the PrismaPg adapter calls
 * `pool.query({text, values})`), so tests can compare or EXPLAIN exactly what the repository issued.
 */
export function captureSql(pool: pg.Pool) {
  const queries: CapturedQuery[] = [];
  const original = pool.query;
  pool.query = function (this: pg.Pool, ...args: unknown[]) {
    const config = args[0] as { text?: string; values?: unknown[] } | string;
    if (typeof config === 'object' && config?.text)
      queries.push({ text: config.text, values: config.values ?? [] });
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pool.query;
  return {
    queries,
    matching: (pattern: RegExp) => queries.filter((q) => pattern.test(q.text)),
    clear: () => void queries.splice(0),
    restore: () => void (pool.query = original),
  };
}
