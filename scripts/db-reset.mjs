// `npm run db:reset`: the local database from scratch: drops the database `npm start` uses (its embedded
// PostgreSQL unless DATABASE_URL or LOCAL_DB says otherwise), applies every migration, seeds the demo
// admin again, and deletes this deployment's Redis keys (REDIS_KEY_PREFIX: queued jobs, rate limits and
// job results that point at rows which no longer exist). Stop `npm start` first, or restart it after.
//
// Development only: refused when APP_ENV is staging or production, or when the database is not on this
// machine (127.0.0.1, localhost, ::1). Reads .env like `npm start`. `npm run db:seed` adds the demo data.
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { loadDotEnv, setting } from './lib/env.mjs';
import { localDatabase } from './lib/local-database.mjs';
import { redactUrl } from './lib/output.mjs';
import { deploy, dropDatabase } from './migrate.mjs';
import { seedDemoAdmin } from './local/database.mjs';

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

class RefusedError extends Error {}

/** Why resetting this database is refused, or null. */
export function refusal(databaseUrl, appEnv = setting('APP_ENV', 'development')) {
  if (appEnv === 'staging' || appEnv === 'production')
    return `APP_ENV is ${appEnv}: db:reset is for development`;
  let host;
  try {
    host = new URL(databaseUrl).hostname;
  } catch {
    return `not a URL: ${redactUrl(databaseUrl)}`;
  }
  if (!LOCAL_HOSTS.has(host))
    return `the database is on ${host}, not on this machine: db:reset only resets local databases`;
  return null;
}

/** Deletes `${prefix}:*` (what the service and its queues write); returns how many keys. */
async function clearRedis(url, prefix) {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
  } catch (error) {
    return `not cleared (${error.message})`;
  }
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return `${deleted} key(s) under ${prefix}: deleted`;
}

export async function reset({ log = () => {} } = {}) {
  const { url, source } = localDatabase();
  const refused = refusal(url);
  if (refused) throw new RefusedError(refused);
  log(`database: ${redactUrl(url)} (${source})`);
  await dropDatabase({ databaseUrl: url });
  log('dropped');
  await deploy({ databaseUrl: url, log: (line) => log(`migrations: ${line}`) });
  await seedDemoAdmin(url);
  const redis = await clearRedis(
    setting('REDIS_URL', 'redis://127.0.0.1:6379'),
    setting('REDIS_KEY_PREFIX', 'subsvc'),
  );
  log(`redis: ${redis}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  loadDotEnv();
  reset({ log: (line) => process.stdout.write(`db:reset: ${line}\n`) }).then(
    () => {
      process.stdout.write(
        'db:reset: done (restart npm start if it is running; npm run db:seed adds demo data)\n',
      );
      process.exit(0);
    },
    (error) => {
      process.stderr.write(`db:reset: ${error.message}\n`);
      process.exit(error instanceof RefusedError ? 2 : 1);
    },
  );
}
