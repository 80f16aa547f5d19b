// Module hooks that run the TypeScript sources directly (same swc settings as jest.config.mjs: legacy
// decorators with their metadata, which Nest needs). Used by scripts that need the application's code
// without a build, e.g. `npm run openapi`. Register with `register('./ts-hooks.mjs', import.meta.url)`.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

const SWC = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2023',
    keepClassNames: true,
  },
  module: { type: 'es6' },
  sourceMaps: 'inline',
};

/** The sources import `./x.js` (NodeNext style): resolve to `./x.ts` when only that exists. */
export async function resolve(specifier, context, next) {
  if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.startsWith('file:')) {
    const ts = new URL(specifier.replace(/\.js$/, '.ts'), context.parentURL);
    const js = new URL(specifier, context.parentURL);
    if (!existsSync(fileURLToPath(js)) && existsSync(fileURLToPath(ts)))
      return { url: ts.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const filename = fileURLToPath(url);
  const { code } = await transform(await readFile(filename, 'utf8'), { ...SWC, filename });
  return { format: 'module', source: code, shortCircuit: true };
}
