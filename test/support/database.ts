import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

const serverUrl = () => process.env.TEST_PG_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432';

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${serverUrl()}/postgres` });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database cloned from the run's template; private to the calling test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const runId = process.env.TEST_RUN_ID;
  const template = process.env.TEST_DB_TEMPLATE;
  if (!runId || !template) throw new Error('test/setup/global-setup.mjs did not run');
  const name = `sst_${runId}_${randomBytes(4).toString('hex')}`;
  await admin(async (client) => {
    // Two clones of one template at the same moment can collide ("being accessed by other users").
    for (let attempt = 1; ; attempt += 1) {
      try {
        await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== '55006' || attempt >= 20) throw err;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  });
  return {
    name,
    url: `${serverUrl()}/${name}`,
    drop: () =>
      admin(async (client) => void (await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))),
  };
}
