import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { loadDotEnv } from './dotenv.js';
import { loadConfig } from './env.js';

describe('loadDotEnv (the API and the worker read .env like npm start)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dotenv-'));
  const file = join(dir, '.env');
  writeFileSync(file, '# comment\nPORT=4100\nLOG_LEVEL=debug\nPROJECT_SLUG="from the file"\nCORS_ORIGINS=\n');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('fills what the environment does not set, and the environment wins (even set empty)', () => {
    const env: Record<string, string | undefined> = { LOG_LEVEL: 'warn', PROJECT_SLUG: '' };
    expect(loadDotEnv(env, file)).toBe(file);
    expect(env).toEqual({ PORT: '4100', LOG_LEVEL: 'warn', PROJECT_SLUG: '', CORS_ORIGINS: '' });
    expect(loadConfig(env).port).toBe(4100);
  });

  it('does nothing without a file or with DOTENV=off', () => {
    const env: Record<string, string | undefined> = {};
    expect(loadDotEnv(env, join(dir, 'missing.env'))).toBeNull();
    expect(env).toEqual({});
    const off: Record<string, string | undefined> = { DOTENV: 'off' };
    expect(loadDotEnv(off, file)).toBeNull();
    expect(off).toEqual({ DOTENV: 'off' });
  });
});
