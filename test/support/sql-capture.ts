import type pg from 'pg';

export interface CapturedQuery {
  text: string;
  values: unknown[];
}

/**
 * Records the SQL that Prisma sends through the pool outside transactions (the PrismaPg adapter calls
 * `pool.query({text, values})`), so tests can compare or EXPLAIN exactly what the repository issued.
 * With `transactions`, also the statements of transactions (the adapter checks a client out with
 * `pool.connect()` and sends them on it).
 */
export function captureSql(pool: pg.Pool, options: { transactions?: boolean } = {}) {
  const queries: CapturedQuery[] = [];
  const record = (config: unknown) => {
    const query = config as { text?: string; values?: unknown[] } | string;
    if (typeof query === 'object' && query?.text)
      queries.push({ text: query.text, values: query.values ?? [] });
  };
  const original = pool.query;
  pool.query = function (this: pg.Pool, ...args: unknown[]) {
    record(args[0]);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pool.query;

  const originalConnect = pool.connect;
  const wrapped = new Map<pg.PoolClient, pg.PoolClient['query']>();
  if (options.transactions) {
    // Only the promise form: pool.query itself checks clients out with a callback, and is recorded above.
    pool.connect = async function (this: pg.Pool, ...args: unknown[]) {
      if (args.length > 0) return (originalConnect as (...a: unknown[]) => unknown).apply(this, args);
      const client = await (originalConnect as () => Promise<pg.PoolClient>).call(this);
      if (!wrapped.has(client)) {
        const query = client.query;
        wrapped.set(client, query);
        client.query = function (this: pg.PoolClient, ...queryArgs: unknown[]) {
          record(queryArgs[0]);
          return (query as (...a: unknown[]) => unknown).apply(this, queryArgs);
        } as typeof client.query;
      }
      return client;
    } as typeof pool.connect;
  }
  return {
    queries,
    matching: (pattern: RegExp) => queries.filter((q) => pattern.test(q.text)),
    clear: () => void queries.splice(0),
    restore: () => {
      pool.query = original;
      pool.connect = originalConnect;
      for (const [client, query] of wrapped) client.query = query;
    },
  };
}
