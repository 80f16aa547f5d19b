// The runtime image's last install step: removes from node_modules/ what nothing imports at run time.
// `npm ci --omit=dev` still installs the Prisma CLI (an optional peer of @prisma/client) with its
// Studio, React, PGlite and Effect, TypeScript (an optional peer of @nestjs/swagger's compile-time
// plugin), and Prisma's query compilers for five databases in two sizes, where the generated client
// loads one (PostgreSQL, `small`).
//
//   node scripts/prune-runtime.mjs [--dry-run] [app directory, default: the repository]
//
// Kept: the production dependencies of package.json, every package the compiled code (dist/) and the
// migration runner (scripts/migrate.mjs and what it imports) import, and everything those depend on
// (dependencies, optional dependencies, and peer dependencies that are not optional), as installed.
// Prints the sizes before and after.
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PACKAGE = /^(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(?:\/[\w./-]*)?$/;

/** The bare package names a module imports (`pg`, `@prisma/adapter-pg`), node: built-ins excluded. */
export function packagesImported(source) {
  const statements = [
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*(['"])([^'"]+)\1/gm,
    /^\s*import\s*(['"])([^'"]+)\1/gm,
    /\bimport\(\s*(['"])([^'"]+)\1\s*\)/g,
    /\brequire\(\s*(['"])([^'"]+)\1\s*\)/g,
    /\bimport\.meta\.resolve\(\s*(['"])([^'"]+)\1\s*\)/g,
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

function files(dir, extensions) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((file) => extensions.some((ext) => file.endsWith(ext)))
    .map((file) => join(dir, file));
}

/** Where `name` is installed as seen from `fromDir` (Node's lookup: nearest node_modules upwards). */
function locate(name, fromDir, root) {
  let dir = fromDir;
  for (;;) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === root || dirname(dir) === dir) return null;
    dir = dirname(dir);
  }
}

/** The installed package directories reachable from the runtime's own imports. */
export function runtimeClosure(appDir) {
  const sources = [
    ...files(join(appDir, 'dist'), ['.js', '.mjs']),
    join(appDir, 'scripts', 'migrate.mjs'),
    ...files(join(appDir, 'scripts', 'migrate'), ['.mjs']),
    ...files(join(appDir, 'scripts', 'lib'), ['.mjs']),
  ].filter((file) => existsSync(file));
  // The production dependencies the project declares (Nest loads some of them itself, by name, at run
  // time: @nestjs/platform-express), and whatever the code imports (a subset, checked by
  // test/platform/docker-image.e2e-spec.ts).
  const declared = Object.keys(JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')).dependencies ?? {});
  const roots = new Set([...declared, ...sources.flatMap((file) => packagesImported(readFileSync(file, 'utf8')))]);
  const kept = new Set();
  const queue = [...roots].map((name) => [name, appDir]);
  while (queue.length > 0) {
    const [name, fromDir] = queue.shift();
    const dir = locate(name, fromDir, appDir);
    if (!dir || kept.has(dir)) continue;
    kept.add(dir);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const optionalPeers = new Set(
      Object.entries(pkg.peerDependenciesMeta ?? {})
        .filter(([, meta]) => meta?.optional)
        .map(([peer]) => peer),
    );
    const next = [
      ...Object.keys(pkg.dependencies ?? {}),
      ...Object.keys(pkg.optionalDependencies ?? {}),
      ...Object.keys(pkg.peerDependencies ?? {}).filter((peer) => !optionalPeers.has(peer)),
    ];
    for (const dep of next) queue.push([dep, dir]);
  }
  return { roots: [...roots].sort(), kept };
}

/** Every installed package directory under node_modules (nested ones included). */
function installed(modulesDir) {
  const found = [];
  if (!existsSync(modulesDir)) return found;
  for (const entry of readdirSync(modulesDir)) {
    if (entry.startsWith('.')) continue;
    const path = join(modulesDir, entry);
    if (entry.startsWith('@')) {
      for (const scoped of readdirSync(path)) found.push(join(path, scoped));
    } else {
      found.push(path);
    }
  }
  return found.flatMap((dir) => [dir, ...installed(join(dir, 'node_modules'))]);
}

function size(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((total, entry) => total + size(join(path, entry)), 0);
}

/** Prisma's query compilers the generated client does not load (it imports the PostgreSQL `small` one). */
function unusedQueryCompilers(appDir, kept) {
  const runtime = [...kept].find((dir) => dir.endsWith(join('@prisma', 'client')));
  if (!runtime || !existsSync(join(runtime, 'runtime'))) return [];
  return readdirSync(join(runtime, 'runtime'))
    .filter((file) => /^query_compiler_/.test(file) && !/^query_compiler_small_bg\.postgresql\./.test(file))
    .map((file) => join(runtime, 'runtime', file));
}

export function prune(appDir, { dryRun = false } = {}) {
  const modulesDir = join(appDir, 'node_modules');
  if (!existsSync(join(appDir, 'dist'))) throw new Error(`${join(appDir, 'dist')} is missing: copy dist/ first`);
  const before = dryRun ? null : size(modulesDir);
  const { kept } = runtimeClosure(appDir);
  const removable = installed(modulesDir).filter(
    (dir) => ![...kept].some((keep) => keep === dir || keep.startsWith(`${dir}/node_modules/`)),
  );
  // A removed package takes its nested node_modules with it; list the outermost only.
  const removed = removable.filter(
    (dir) => !removable.some((other) => other !== dir && dir.startsWith(`${other}/node_modules/`)),
  );
  const compilers = unusedQueryCompilers(appDir, kept);
  if (!dryRun) for (const path of [...removed, ...compilers]) rmSync(path, { recursive: true, force: true });
  return {
    before,
    after: dryRun ? null : size(modulesDir),
    removed: removed.map((dir) => relative(modulesDir, dir)),
    compilers: compilers.length,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const dryRun = args.includes('--dry-run');
  const appDir = resolvePath(
    args.find((arg) => !arg.startsWith('--')) ?? join(dirname(fileURLToPath(import.meta.url)), '..'),
  );
  const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
  const result = prune(appDir, { dryRun });
  process.stdout.write(
    `prune-runtime: ${result.removed.length} packages not imported at run time${dryRun ? ' (dry run)' : ' removed'}: ` +
      `${result.removed.join(' ')}\n` +
      `prune-runtime: ${result.compilers} unused Prisma query compiler files\n` +
      (dryRun ? '' : `prune-runtime: node_modules ${mb(result.before)} -> ${mb(result.after)}\n`),
  );
}
