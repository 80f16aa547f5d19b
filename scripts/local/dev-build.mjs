// `npm run start:dev`'s compiler: src/ to .dev-build/ with swc (the transform the tests use: legacy
// decorators with their metadata, ES modules), file by file, in milliseconds. No type checking: run
// `npx tsc --noEmit -p tsconfig.json --watch` beside it, or `npm run lint` before a commit.
// LOCAL_DEV_SOURCE_DIR / LOCAL_DEV_BUILD_DIR move the two directories (the test uses a copy of src/).
import { watch } from 'node:fs';
import { copyFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve as resolvePath } from 'node:path';
import { transformFile } from '@swc/core';
import { ROOT, setting } from '../lib/env.mjs';

export const sourceDir = () => resolvePath(ROOT, setting('LOCAL_DEV_SOURCE_DIR', 'src'));
// Inside the repository so that the compiled files resolve node_modules/ as dist/ does.
export const buildDir = () => resolvePath(ROOT, setting('LOCAL_DEV_BUILD_DIR', '.dev-build'));

const SWC = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2023',
    keepClassNames: true,
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
  swcrc: false,
  configFile: false,
};

const skipped = (file) => file.endsWith('.spec.ts') || file.endsWith('.d.ts');

async function compile(rel) {
  const source = join(sourceDir(), rel);
  if (rel.endsWith('.ts')) {
    if (skipped(rel)) return;
    const { code } = await transformFile(source, { ...SWC, filename: source });
    const target = join(buildDir(), rel.replace(/\.ts$/, '.js'));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, code);
  } else {
    // Assets (e-mail templates): copied as they are, like nest-cli.json's assets.
    const target = join(buildDir(), rel);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(source, target);
  }
}

async function remove(rel) {
  const target = join(buildDir(), rel.endsWith('.ts') ? rel.replace(/\.ts$/, '.js') : rel);
  await rm(target, { force: true, recursive: true });
}

async function walk(dir) {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(sourceDir(), join(entry.parentPath ?? entry.path, entry.name)));
}

/** A clean build of every source file; returns the number of files. */
export async function buildAll() {
  await rm(buildDir(), { recursive: true, force: true });
  await mkdir(buildDir(), { recursive: true });
  // ES modules whatever directory LOCAL_DEV_BUILD_DIR names.
  await writeFile(join(buildDir(), 'package.json'), '{ "type": "module" }\n');
  const files = await walk(sourceDir());
  await Promise.all(files.map((rel) => compile(rel)));
  return files.length;
}

/**
 * Watches the sources; after a quiet 150 ms recompiles what changed and calls `onBuilt(files, changedAt)` (when the first change was seen).
 * Compile errors go to `onError` (the running processes stay up). Returns a function that stops watching.
 */
export function watchSources({ onBuilt, onError }) {
  const pending = new Set();
  let timer = null;
  let firstChangeAt = 0;
  const flush = async () => {
    timer = null;
    const files = [...pending];
    const changedAt = firstChangeAt;
    pending.clear();
    try {
      for (const rel of files) {
        const exists = await stat(join(sourceDir(), rel)).then(
          (s) => s.isFile(),
          () => false,
        );
        if (exists) await compile(rel);
        else await remove(rel);
      }
      onBuilt(files, changedAt);
    } catch (error) {
      onError(error);
    }
  };
  const watcher = watch(sourceDir(), { recursive: true }, (_event, filename) => {
    if (!filename) return;
    const rel = String(filename);
    if (skipped(rel) || rel.split(/[\\/]/).some((part) => part.startsWith('.'))) return;
    if (pending.size === 0) firstChangeAt = Date.now();
    pending.add(rel);
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void flush(), 150);
  });
  return () => {
    if (timer) clearTimeout(timer);
    watcher.close();
  };
}
