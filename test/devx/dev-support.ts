import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/processes.js';
import type { INestApplication } from '@nestjs/common';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../support/test-env.js';

interface DevIdentityModule {
  DEV_ISSUER: string;
  startDevIdentity: (port: number) => Promise<string>;
}
interface ProcessesModule {
  started: { stop: () => Promise<void> }[];
}
interface DevLlmModule {
  startDevLlm: (options: { port?: number }) => Promise<{ url: string; close: () => Promise<void> }>;
}

/**
 * What `npm start` gives the development scripts, on a test database: the launcher's development
 * identity provider (its key in a throwaway LOCAL_DATA_DIR) and, optionally, its language-model
 * stand-in, an API listening on a free port and a worker.
 */
export class DevWorld {
  private constructor(
    readonly env: TestEnv,
    readonly api: ApiApp,
    private readonly worker: INestApplication,
    readonly apiUrl: string,
    readonly dataDir: string,
    private readonly closers: (() => Promise<void>)[],
  ) {}

  static async start(options: { llm?: boolean } = {}): Promise<DevWorld> {
    const dataDir = mkdtempSync(join(tmpdir(), 'devx-'));
    process.env.LOCAL_DATA_DIR = dataDir;
    const closers: (() => Promise<void>)[] = [];
    // @ts-expect-error plain ESM script without type declarations
    const identity = (await import('../../scripts/local/identity.mjs')) as DevIdentityModule;
    // @ts-expect-error plain ESM script without type declarations
    const processes = (await import('../../scripts/lib/processes.mjs')) as ProcessesModule;
    const jwksUrl = await identity.startDevIdentity(0);
    closers.push(processes.started.pop()!.stop);
    const extra: Record<string, string> = {
      IDENTITY_JWKS_URL: jwksUrl,
      IDENTITY_ISSUER: identity.DEV_ISSUER,
    };
    if (options.llm) {
      // @ts-expect-error plain ESM script without type declarations
      const { startDevLlm } = (await import('../../scripts/local/llm.mjs')) as DevLlmModule;
      const llm = await startDevLlm({ port: 0 });
      closers.push(llm.close);
      extra.LLM_BASE_URL = llm.url;
    }
    const env = await TestEnv.create({ env: extra });
    const api = await env.startApi();
    await api.app.listen(0, '127.0.0.1');
    const { port } = api.app.getHttpServer().address() as { port: number };
    const worker = await env.startWorker();
    return new DevWorld(env, api, worker, `http://127.0.0.1:${port}`, dataDir, closers);
  }

  /** Runs `node scripts/<script> ...args` as npm would, pointed at this world. */
  run(script: string, args: string[] = [], overrides: Record<string, string> = {}) {
    return new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, 'scripts', script), ...args], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          DOTENV: 'off',
          LOCAL_DATA_DIR: this.dataDir,
          DEV_BILLING_API_URL: this.apiUrl,
          DATABASE_URL: this.env.env.DATABASE_URL,
          REDIS_URL: this.env.env.REDIS_URL,
          REDIS_KEY_PREFIX: this.env.env.REDIS_KEY_PREFIX,
          BILLING_WEBHOOK_SECRET: TEST_SECRETS.BILLING_WEBHOOK_SECRET,
          ...overrides,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('exit', (code) => resolve({ code, output }));
    });
  }

  /** Stops the API and the worker, as a developer stops `npm start`. */
  async stopProcesses(): Promise<void> {
    await this.env.stop(this.api.app);
    await this.env.stop(this.worker);
  }

  async close(): Promise<void> {
    await this.env.close();
    for (const close of this.closers.reverse()) await close();
    delete process.env.LOCAL_DATA_DIR;
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
