import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ROOT } from '../support/processes.js';

/**
 * Issue 20 item 4: `npm run db:migrate:status` (and the other db:* scripts) look at the database
 * `npm start` uses: DATABASE_URL, LOCAL_DB=server, or the embedded server on the port it runs on.
 */
describe('the database the development scripts use (scripts/lib/local-database.mjs)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'local-db-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const status = (env: Record<string, string>) =>
    spawnSync(process.execPath, [join(ROOT, 'scripts', 'migrate.mjs'), 'status'], {
      cwd: ROOT,
      // DOTENV=off: a developer's .env must not decide which database this test sees.
      env: {
        PATH: process.env.PATH ?? '',
        DOTENV: 'off',
        LOCAL_DATA_DIR: dataDir,
        DATABASE_URL: '',
        LOCAL_DB: '',
        ...env,
      },
      encoding: 'utf8',
    });

  it('is DATABASE_URL when set', () => {
    const run = status({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/nowhere' });
    expect(run.stderr).toContain('database: postgresql://postgres@127.0.0.1:1/nowhere (DATABASE_URL)');
    expect(run.status).toBe(1);
  });

  it('is the embedded server on the port its postmaster.pid names while it runs, else LOCAL_DB_PORT', () => {
    const stopped = status({ LOCAL_DB_PORT: '54999' });
    expect(stopped.stderr).toContain(
      '127.0.0.1:54999/subscription_service (embedded PostgreSQL (not running',
    );
    mkdirSync(join(dataDir, 'postgres'), { recursive: true });
    // postmaster.pid: pid, data directory, start time, port, ...
    writeFileSync(
      join(dataDir, 'postgres', 'postmaster.pid'),
      `12345\n${dataDir}/postgres\n1700000000\n54777\n`,
    );
    const running = status({ LOCAL_DB_PORT: '54999' });
    expect(running.stderr).toContain(
      'postgresql://postgres:***@127.0.0.1:54777/subscription_service (embedded PostgreSQL (running))',
    );
  });

  it('is the server on 127.0.0.1:5432 with LOCAL_DB=server', () => {
    const run = status({ LOCAL_DB: 'server' });
    expect(run.stderr).toContain(
      'database: postgresql://postgres@127.0.0.1:5432/subscription_service (LOCAL_DB=server)',
    );
  });
});
