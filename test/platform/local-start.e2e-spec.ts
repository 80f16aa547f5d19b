import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { freePort, ROOT } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

/** The processes below `root` (children, grandchildren, ...), from /proc. */
function descendants(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [pid, ppid] of parentOf) {
      if (ppid === parent) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });

/**
 * `npm start` on a machine without DATABASE_URL (issue item 13): scripts/local-start.mjs starts its own
 * embedded PostgreSQL 16, migrates, seeds the demo admin, runs the API and the worker, and Ctrl-C stops
 * everything it started. Run with a throwaway LOCAL_DATA_DIR and free ports, on the compiled dist/.
 */
describe('npm start (scripts/local-start.mjs)', () => {
  const linux = existsSync('/proc/self/stat');
  let dataDir: string;
  let env: Record<string, string>;
  let ports: { api: number; worker: number; identity: number; db: number };
  let launcher: ChildProcess;
  let output = '';
  let exited: Promise<number | null>;

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'main.js')))
      throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
    dataDir = mkdtempSync(join(tmpdir(), 'local-start-'));
    // Run as root, the launcher hands PostgreSQL to the `postgres` account, which must reach the directory.
    chmodSync(dataDir, 0o755);
    const [api, worker, identity, db] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    ports = { api, worker, identity, db };
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      NO_COLOR: '1',
      APP_ENV: 'development',
      LOG_LEVEL: 'warn',
      LOCAL_BUILD: 'never',
      LOCAL_DATA_DIR: dataDir,
      // Set empty on purpose: a developer's .env must not decide what this test exercises.
      DATABASE_URL: '',
      LOCAL_DB: '',
      IDENTITY_JWKS_URL: '',
      IDENTITY_ISSUER: '',
      PORT: String(api),
      WORKER_PORT: String(worker),
      LOCAL_IDENTITY_PORT: String(identity),
      LOCAL_DB_PORT: String(db),
      // The development LLM stand-in (LLM_BASE_URL unset) on a free port too.
      LLM_BASE_URL: '',
      LOCAL_LLM_PORT: String(await freePort()),
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `t${process.env.TEST_RUN_ID}localstart`,
    };
    launcher = spawn(process.execPath, [join(ROOT, 'scripts', 'local-start.mjs')], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    launcher.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    launcher.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    exited = new Promise((resolve) => launcher.on('exit', (code) => resolve(code)));
  });

  afterAll(async () => {
    if (launcher && launcher.exitCode === null && launcher.signalCode === null) {
      launcher.kill('SIGINT');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts embedded PostgreSQL, serves /health/ready and an authenticated /me, and stops everything on Ctrl-C', async () => {
    const ready = await waitFor(
      async () => {
        if (launcher.exitCode !== null) throw new Error(`npm start exited early:\n${output}`);
        const res = await fetch(`http://127.0.0.1:${ports.api}/health/ready`).catch(() => null);
        return res?.status === 200 ? res : null;
      },
      60_000,
      200,
    );
    expect(((await ready.json()) as { ok: boolean }).ok).toBe(true);
    // The embedded server under the data directory, not the PostgreSQL that answers on 5432 here.
    expect(output).toMatch(
      /database: postgresql:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/subscription_service \(embedded/,
    );
    expect(existsSync(join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);

    const minted = spawnSync(
      process.execPath,
      [join(ROOT, 'scripts', 'dev-token.mjs'), 'admin@example.com'],
      {
        cwd: ROOT,
        env,
        encoding: 'utf8',
      },
    );
    expect(minted.status).toBe(0);
    const me = await fetch(`http://127.0.0.1:${ports.api}/api/v1/me`, {
      headers: { authorization: `Bearer ${minted.stdout.trim()}` },
    });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ identity_user_id: 'user_dev_admin', email: 'admin@example.com' });

    // API, worker, PostgreSQL and its backends: everything the launcher started, seen before the stop.
    const children = linux ? descendants(launcher.pid!) : [];
    if (linux) expect(children.length).toBeGreaterThanOrEqual(3);

    launcher.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(children.filter(alive)).toEqual([]);
    for (const port of Object.values(ports)) expect(await portFree(port)).toBe(true);
  }, 90_000);
});
