import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * Reads `.env` from the working directory into `env` before the configuration is parsed, as `npm start`,
 * the migration runner and the other development scripts do: variables already set win (even when set
 * empty). `DOTENV=off` skips it (the test suite sets it for the processes it spawns, so a developer's
 * .env cannot change what a test exercises). Returns the file read, or null.
 */
export function loadDotEnv(
  env: Record<string, string | undefined> = process.env,
  file: string = resolve(process.cwd(), '.env'),
): string | null {
  if (env.DOTENV?.trim().toLowerCase() === 'off' || !existsSync(file)) return null;
  for (const [name, value] of Object.entries(parseEnv(readFileSync(file, 'utf8')))) {
    if (env[name] === undefined) env[name] = value;
  }
  return file;
}
