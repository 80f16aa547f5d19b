// `npm start`'s build step: `npm run build` when dist/ is missing or older than its sources
// (LOCAL_BUILD=auto|always|never).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dataDir, ROOT, setting } from '../lib/env.mjs';
import { say } from '../lib/output.mjs';
import { isStopping, started, stopProcess } from '../lib/processes.mjs';

const buildStamp = () => join(dataDir(), 'last-build');

function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Why dist/ must be rebuilt, or null when it is up to date. */
function buildReason() {
  const entries = ['main.js', 'worker.js'].map((file) => join(ROOT, 'dist', file));
  if (entries.some((file) => !existsSync(file))) return 'dist/ is incomplete';
  // The newest of our stamp and tsc's own build info: a manual `npm run build` counts as a build too.
  // Entry files are not compared because incremental tsc leaves unchanged outputs untouched.
  const built = Math.max(newestMtime(buildStamp()), newestMtime(join(ROOT, 'dist', '.tsbuildinfo')));
  const generated = new Set(['generated', 'metadata.ts']); // written by the build itself
  const sources = readdirSync(join(ROOT, 'src'))
    .filter((entry) => !generated.has(entry))
    .map((entry) => join(ROOT, 'src', entry));
  const inputs = [
    ...sources,
    ...[
      'prisma/schema.prisma',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'nest-cli.json',
    ].map((file) => join(ROOT, file)),
  ];
  return inputs.some((input) => newestMtime(input) > built) ? 'sources changed since the last build' : null;
}

export async function buildIfNeeded() {
  const mode = setting('LOCAL_BUILD', 'auto');
  if (!['auto', 'always', 'never'].includes(mode))
    throw new Error(`LOCAL_BUILD: expected auto, always or never`);
  const reason = mode === 'always' ? 'LOCAL_BUILD=always' : mode === 'never' ? null : buildReason();
  if (!reason) return;
  say(`building (${reason}) ...`);
  const buildStartedAt = new Date();
  if (!existsSync(join(ROOT, 'dist', 'main.js')) || !existsSync(join(ROOT, 'dist', 'worker.js'))) {
    // Incremental tsc trusts its build info and would not re-emit a deleted output.
    await rm(join(ROOT, 'dist', '.tsbuildinfo'), { force: true });
  }
  // Under `npm start`, npm_execpath is the running npm: no dependence on PATH.
  const npmCli = process.env.npm_execpath;
  const [command, args] = npmCli?.endsWith('js')
    ? [process.execPath, [npmCli, 'run', 'build']]
    : ['npm', ['run', 'build']];
  const child = spawn(command, args, { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' });
  const entry = { name: 'build', stop: () => stopProcess(child, 'build') };
  started.push(entry);
  const code = await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (status) => resolve(status));
  });
  started.splice(started.indexOf(entry), 1);
  if (isStopping()) return;
  if (code !== 0) throw new Error(`npm run build failed (exit code ${code})`);
  for (const file of ['main.js', 'worker.js']) {
    if (!existsSync(join(ROOT, 'dist', file))) throw new Error(`npm run build did not produce dist/${file}`);
  }
  await mkdir(dataDir(), { recursive: true });
  await writeFile(buildStamp(), `${buildStartedAt.toISOString()}\n`);
  // Dated at the start: a source saved while the build ran may have been missed, so it still counts.
  await utimes(buildStamp(), buildStartedAt, buildStartedAt);
}
