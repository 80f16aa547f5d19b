/**
 * The typed client in clients/typescript builds (tsc, declarations included) and its types hold: the
 * README's frontend example type-checks, and misuse (an unknown field, a wrong path, a problem's status
 * used as a string) does not. It packs on its own: `npm pack` (and so a frontend's install of the tarball)
 * gets the built dist/ without anyone building it first.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';

const ROOT = join(import.meta.dirname, '..', '..');
const CLIENT = join(ROOT, 'clients', 'typescript');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const SCRATCH = join(CLIENT, '.typecheck');

async function tsc(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [TSC, ...args], { cwd: CLIENT });
    return { code: 0, output: stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Type-checks one snippet against the client's sources, with the client's compiler options. */
async function typecheck(name: string, source: string) {
  mkdirSync(SCRATCH, { recursive: true });
  writeFileSync(join(SCRATCH, `${name}.ts`), source);
  writeFileSync(
    join(SCRATCH, `${name}.tsconfig.json`),
    JSON.stringify({
      extends: '../tsconfig.json',
      compilerOptions: { noEmit: true, rootDir: '..' },
      include: [`${name}.ts`],
    }),
  );
  return tsc('-p', join(SCRATCH, `${name}.tsconfig.json`));
}

describe('clients/typescript', () => {
  afterAll(() => rmSync(SCRATCH, { recursive: true, force: true }));

  it('builds to ESM with declarations', async () => {
    const build = await tsc('-p', 'tsconfig.json');
    expect(build).toEqual({ code: 0, output: '' });
    const client = (await import(join(CLIENT, 'dist', 'index.js'))) as Record<string, unknown>;
    expect(Object.keys(client).sort()).toEqual(
      ['createApiClient', 'isProblem', 'isReplayed', 'newIdempotencyKey', 'readRateLimit'].sort(),
    );
  }, 120_000);

  it('type-checks the frontend example and refuses misuse', async () => {
    const example = await typecheck('example', `import '../example/frontend.js';\n`);
    expect(example).toEqual({ code: 0, output: '' });
    const misuse = await typecheck(
      'misuse',
      `import { createApiClient } from '../src/index.js';
const client = createApiClient({ baseUrl: 'http://localhost:3000' });
export async function wrong() {
  await client.POST('/api/v1/saved_searches', { body: { nme: 'x', query: '' } });
  await client.GET('/api/v1/saved-searches');
  const { error } = await client.GET('/api/v1/me');
  if (error) return error.status.toUpperCase();
  return null;
}
`,
    );
    expect(misuse.code).not.toBe(0);
    // One error per wrong line: the unknown field, the unknown path, a problem's status read as a string.
    const lines = [...misuse.output.matchAll(/misuse\.ts\((\d+),\d+\): error TS/g)].map((m) => Number(m[1]));
    expect(lines).toEqual([4, 5, 7]);
    expect(misuse.output).toContain("'nme'");
    expect(misuse.output).toContain("'toUpperCase' does not exist on type 'number'");
  }, 120_000);

  it('packs with dist/ built by its prepare script, from a copy that has no dist/', async () => {
    // A copy as a clone has it (no dist/, no node_modules of its own); the repository's node_modules
    // above it provide tsc and openapi-fetch's types, as in a checkout where `npm install` ran.
    const scratch = mkdtempSync(join(tmpdir(), 'client-pack-'));
    try {
      symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'));
      const copy = join(scratch, 'client');
      cpSync(CLIENT, copy, {
        recursive: true,
        filter: (source) => !/^(dist|node_modules|\.typecheck)\b/.test(relative(CLIENT, source)),
      });
      const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json'], {
        cwd: copy,
        env: { ...process.env, npm_config_update_notifier: 'false' },
      });
      const [packed] = JSON.parse(stdout) as [{ name: string; files: { path: string }[] }];
      const files = packed.files.map((file) => file.path);
      expect(files).toEqual(
        expect.arrayContaining([
          'package.json',
          'README.md',
          'dist/index.js',
          'dist/index.d.ts',
          'dist/schema.js',
          'dist/schema.d.ts',
        ]),
      );
      // Nothing of the build set-up or the scratch type checks ships.
      expect(files.filter((file) => !/^(dist|src)\/|^(package\.json|README\.md)$/.test(file))).toEqual([]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 120_000);
});
