import type pg from 'pg';

/**
 * A connection inside a plain-SQL transaction: repositories whose bulk statements run on the pool (not
 * through Prisma) take it the way the others take a Prisma `Tx`. Those statements are hot and fixed, so
 * they are named (`query({ name, text, values })`): each connection parses and plans them once.
 */
export type SqlTx = Pick<pg.PoolClient, 'query'>;

/**
 * Runs `work` in one transaction on a connection of the pool: BEGIN, the work, COMMIT (ROLLBACK when it
 * throws). For the hot bulk writes that compose statements of several owners (a broadcast page) without
 * the cost of Prisma's interactive transaction.
 */
export async function sqlTransaction<T>(pool: pg.Pool, work: (tx: SqlTx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A connection whose ROLLBACK failed is in an unknown state: it is destroyed, not returned to the pool.
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw err;
  } finally {
    client.release(broken);
  }
}
