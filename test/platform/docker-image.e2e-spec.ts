import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ROOT } from '../support/processes.js';

/**
 * docker/Dockerfile cannot be built on these machines (no Docker engine). These checks replay the parts
 * of it that broke before: `npm ci` runs the postinstall hook before the sources are copied, and the
 * runtime stage installs the production dependencies only.
 */
const dockerfile = readFileSync(join(ROOT, 'docker', 'Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
};
const temps: string[] = [];
afterAll(() => temps.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The stage's instructions, continuation lines joined. */
function stage(name: string): string[] {
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n');
  const start = lines.findIndex((line) => new RegExp(`^FROM .* AS ${name}$`).test(line));
  const end = lines.findIndex((line, i) => i > start && line.startsWith('FROM '));
  return lines.slice(start + 1, end === -1 ? undefined : end).filter((line) => /^[A-Z]+ /.test(line));
}

const PACKAGE = /^(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(?:\/[\w./-]*)?$/;

/** The bare package names a module imports (`pg`, `@prisma/adapter-pg`), node: built-ins excluded. */
function packagesImported(source: string): string[] {
  const statements = [
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*(['"])([^'"]+)\1/gm,
    /^\s*import\s*(['"])([^'"]+)\1/gm,
    /\bimport\(\s*(['"])([^'"]+)\1\s*\)/g,
  ];
  const specifiers = statements.flatMap((re) => [...source.matchAll(re)].map((m) => m[2]));
  return [
    ...new Set(
      specifiers
        .filter((s) => PACKAGE.test(s) && !s.startsWith('node:'))
        .map((s) =>
          s
            .split('/')
            .slice(0, s.startsWith('@') ? 2 : 1)
            .join('/'),
        ),
    ),
  ];
}

describe('docker/Dockerfile', () => {
  it('runs the postinstall hook with only the files copied before `npm ci`', () => {
    const build = stage('build');
    const install = build.findIndex((line) => /^RUN .*\bnpm ci\b/.test(line));
    expect(install).toBeGreaterThan(0);
    const copied = build
      .slice(0, install)
      .filter((line) => line.startsWith('COPY ') && !line.includes('--from'))
      .flatMap((line) => line.split(/\s+/).slice(1, -1));
    expect(copied).toContain('package.json');
    expect(copied).not.toContain('tsconfig.build.json');

    const dir = mkdtempSync(join(tmpdir(), 'docker-build-stage-'));
    temps.push(dir);
    for (const source of copied) cpSync(join(ROOT, source), join(dir, source), { recursive: true });
    // What `npm ci` would have installed.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');

    const hook = spawnSync('npm', ['run', '-s', 'postinstall'], { cwd: dir, encoding: 'utf8' });
    expect({ status: hook.status, stderr: hook.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
    expect(hook.stdout).toMatch(/swagger metadata: skipped/);
    // The Prisma client was generated; the Swagger metadata waits for prebuild.
    expect(existsSync(join(dir, 'src', 'generated', 'prisma', 'client.ts'))).toBe(true);
    expect(existsSync(join(dir, 'src', 'metadata.ts'))).toBe(false);
  }, 60_000);

  it('installs the runtime from the lockfile without devDependencies or install scripts', () => {
    const runtime = stage('runtime');
    const install = runtime.find((line) => /^RUN .*\bnpm ci\b/.test(line));
    expect(install).toMatch(/--omit=dev/);
    expect(install).toMatch(/--ignore-scripts/);
    expect(runtime.some((line) => /COPY --from=build \S*node_modules/.test(line))).toBe(false);
    expect(runtime).toContain('USER node');
  });

  it('gives the migrate service (scripts/migrate.mjs) only production dependencies to import', () => {
    const runtime = stage('runtime');
    expect(runtime).toContain('COPY scripts/migrate.mjs ./scripts/migrate.mjs');
    expect(runtime).toContain('COPY scripts/migrate ./scripts/migrate');
    expect(runtime).toContain('COPY scripts/lib ./scripts/lib');
    const compose = readFileSync(join(ROOT, 'docker', 'compose.yml'), 'utf8');
    expect(compose).toMatch(/command: \['node', 'scripts\/migrate\.mjs', 'deploy'\]/);

    // The runner and every module it imports, relative ones followed (scripts/migrate/, scripts/lib/).
    const seen = new Set<string>();
    const queue = [join(ROOT, 'scripts', 'migrate.mjs')];
    const imported: string[] = [];
    while (queue.length > 0) {
      const file = queue.shift()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      imported.push(...packagesImported(source));
      for (const m of source.matchAll(/\bfrom\s*'(\.{1,2}\/[^']+)'/g)) queue.push(join(file, '..', m[1]));
    }
    // Copied into the image: scripts/migrate.mjs, scripts/migrate/ and scripts/lib/ only.
    expect(
      [...seen]
        .map((file) => file.slice(ROOT.length + 1))
        .filter((f) => !/^scripts\/(migrate\.mjs|migrate\/|lib\/)/.test(f)),
    ).toEqual([]);
    expect(imported).toContain('pg');
    expect(imported.filter((name) => !(name in pkg.dependencies))).toEqual([]);
  });

  it('compiles code that imports only production dependencies (dist/)', () => {
    const dist = join(ROOT, 'dist');
    if (!existsSync(join(dist, 'main.js'))) throw new Error('dist/ is missing: run `npm run build` first');
    const files = (readdirSync(dist, { recursive: true }) as string[]).filter((f) => f.endsWith('.js'));
    const imported = new Set(files.flatMap((f) => packagesImported(readFileSync(join(dist, f), 'utf8'))));
    // Packages a production dependency depends on are installed too (`npm ci --omit=dev`).
    const dependenciesOf = (dep: string) =>
      Object.keys(
        (
          JSON.parse(readFileSync(join(ROOT, 'node_modules', dep, 'package.json'), 'utf8')) as {
            dependencies?: Record<string, string>;
          }
        ).dependencies ?? {},
      );
    const installed = new Set([
      ...Object.keys(pkg.dependencies),
      ...Object.keys(pkg.dependencies).flatMap(dependenciesOf),
    ]);
    expect(imported.size).toBeGreaterThan(10);
    expect([...imported].filter((name) => !installed.has(name))).toEqual([]);
  });

  it('starts the API and the worker with the node flags of npm start:api and start:worker', () => {
    const flags = (words: string[]) => words.filter((word) => word.startsWith('--'));
    const npmFlags = (script: string) => flags(pkg.scripts[script].split(/\s+/));
    const cmd = stage('runtime').find((line) => line.startsWith('CMD '))!;
    const command = JSON.parse(cmd.slice(4)) as string[];
    expect(command.at(-1)).toBe('dist/main.js');
    expect(flags(command)).toEqual(npmFlags('start:api'));
    expect(npmFlags('start:api')).toContain('--max-old-space-size=256');
    const compose = readFileSync(join(ROOT, 'docker', 'compose.yml'), 'utf8');
    const worker = /command: (\[[^\]]*'dist\/worker\.js'\])/.exec(compose)?.[1];
    expect(worker).toBeDefined();
    expect(flags(JSON.parse(worker!.replaceAll("'", '"')) as string[])).toEqual(npmFlags('start:worker'));
  });

  it('runs both processes with the environment npm start:api and start:worker set before node (decision 15n)', () => {
    const prefix = (script: string) => {
      const words = pkg.scripts[script].split(/\s+/);
      return words.slice(0, words.indexOf('node'));
    };
    expect(prefix('start:api')).toEqual(['MALLOC_ARENA_MAX=2']);
    expect(prefix('start:worker')).toEqual(prefix('start:api'));
    // The image's ENV (the worker's compose service runs the same image, so it inherits it).
    const env = stage('runtime').find((line) => line.startsWith('ENV '))!;
    for (const setting of prefix('start:api')) expect(env.split(/\s+/)).toContain(setting);
    const compose = readFileSync(join(ROOT, 'docker', 'compose.yml'), 'utf8');
    expect(compose).toMatch(/^ {2}worker:\n {4}<<: \*app$/m);
  });
});

describe('docker/compose.yml', () => {
  const compose = readFileSync(join(ROOT, 'docker', 'compose.yml'), 'utf8');

  it('connects to PostgreSQL over TLS, which a deployed boot requires, and the server offers it', () => {
    const urls = [...compose.matchAll(/DATABASE_URL: (.+)$/gm)].map((m) => m[1]);
    expect(urls.length).toBeGreaterThanOrEqual(2);
    for (const url of urls)
      expect(new URL(url.replace(/\$\{[^}]*\}/g, 'x')).searchParams.get('sslmode')).toBe('require');
    expect(compose).toMatch(/- ssl=on\n/);
    expect(compose).toMatch(/- ssl_key_file=\S+\n/);
  });
});
