// The environment every development script reads: the repository root, ./.env, and settings where an empty
// value means unset (as in src/config/env.ts).
import { existsSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Loads ./.env like the compose file does; the process environment wins over the file. `DOTENV=off`
 * skips it (as for the service: src/config/dotenv.ts), which the tests set for the scripts they run.
 */
export function loadDotEnv() {
  const file = join(ROOT, '.env');
  if (process.env.DOTENV?.trim().toLowerCase() === 'off' || !existsSync(file)) return false;
  process.loadEnvFile(file);
  return true;
}

/** An environment variable, with empty meaning unset (as in src/config/env.ts). */
export function setting(name, fallback) {
  const value = process.env[name]?.trim();
  return value ? value : fallback;
}

export function portSetting(name, fallback) {
  const raw = setting(name, String(fallback));
  const port = Number(raw);
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw new Error(`${name}: not a port number: "${raw}"`);
  return port;
}

// Functions, not constants: LOCAL_DATA_DIR may come from .env, which is read after this module loads.
export const dataDir = () => resolvePath(ROOT, setting('LOCAL_DATA_DIR', '.data'));

/**
 * What dev:billing and db:seed say when the API does not answer: they look where `npm start` listens by
 * default, so an `npm start` on another PORT (set in its own terminal) is missed unless this one says so too.
 */
export const DEV_API_HINT =
  'is npm start running? these scripts use PORT as npm start does (3000 unless set), or DEV_BILLING_API_URL';
