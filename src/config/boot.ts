import pg from 'pg';
import type { AppConfig } from './app-config.js';
import {
  billingCycleWarning,
  developmentKeyWarning,
  formatRefusal,
  oneLine,
  runBootChecks,
} from './boot-checks.js';
import { ConfigError, loadConfig } from './env.js';
import { Redis } from 'ioredis';

const PROBE_TIMEOUT_MS = 5000;

async function probeDatabase(config: AppConfig): Promise<void> {
  const client = new pg.Client({
    connectionString: config.database.url,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
  });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function probeRedis(config: AppConfig): Promise<void> {
  // Plain ioredis (not the Nest service) so a refusal does not load the application graph.
  const redis = new Redis(config.redis.url, {
    lazyConnect: true,
    connectTimeout: PROBE_TIMEOUT_MS,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
  } finally {
    redis.disconnect();
  }
}

/**
 * Parses the configuration and applies the boot refusals. On failure prints one line naming the check
 * and exits non-zero; the process never starts half-configured.
 */
export async function bootConfig(env: Record<string, string | undefined> = process.env): Promise<AppConfig> {
  let config: AppConfig;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`boot refused [configuration]: ${oneLine(err.message)}\n`);
      process.exit(1);
    }
    throw err;
  }
  for (const warning of [developmentKeyWarning(config), billingCycleWarning(config)])
    if (warning) process.stderr.write(`${warning}\n`);
  const refusal = await runBootChecks(config, {
    database: () => probeDatabase(config),
    redis: () => probeRedis(config),
  });
  if (refusal) {
    process.stderr.write(`${formatRefusal(refusal)}\n`);
    process.exit(1);
  }
  return config;
}
