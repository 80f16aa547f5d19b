// Drops every database and Redis key this run created, even when test files crashed.
import { Redis } from 'ioredis';
import pg from 'pg';

export default async function globalTeardown() {
  const runId = process.env.TEST_RUN_ID;
  if (!runId) return;
  const client = new pg.Client({ connectionString: `${process.env.TEST_PG_SERVER_URL}/postgres` });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [
      `sst_${runId}_%`,
    ]);
    for (const { datname } of rows) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
  const redis = new Redis(process.env.TEST_REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `t${runId}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
