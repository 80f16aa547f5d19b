import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Issue 16: the shared layers stand below the features. `common/` imports nothing from `infra/`, `kit/`,
// `modules/` or `app/`; `infra/` imports nothing from `kit/`, `modules/` or `app/`; `kit/` (reusable
// building blocks such as the owned-resource kit) imports no feature but the audit trail. Read from the import
// statements of the source, so a new upward import fails here and not in a review.

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

const FORBIDDEN: Record<string, string[]> = {
  common: ['infra', 'modules', 'app', 'kit'],
  infra: ['modules', 'app', 'kit'],
  // kit/: reusable building blocks for features (the owned-resource kit), above common/ and infra/.
  kit: ['modules', 'app'],
};

/** What a layer may import from a layer it otherwise may not: the kit records audit entries. */
const ALLOWED: Record<string, string[]> = {
  kit: ['modules/audit/'],
};

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative specifiers of static imports, re-exports and `import('...')` calls. */
export function relativeImports(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;
  for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
}

function violations(layer: string): string[] {
  const problems: string[] = [];
  for (const file of tsFiles(join(SRC, layer))) {
    for (const specifier of relativeImports(readFileSync(file, 'utf8'))) {
      const target = relative(SRC, resolve(dirname(file), specifier));
      const top = target.split(/[\\/]/)[0];
      const allowed = (ALLOWED[layer] ?? []).some((prefix) =>
        target.split('\\').join('/').startsWith(prefix),
      );
      if (FORBIDDEN[layer].includes(top) && !allowed) {
        problems.push(`${relative(SRC, file)} imports ${target}`);
      }
    }
  }
  return problems;
}

describe('layering of src/', () => {
  it('reads import, re-export and dynamic import specifiers', () => {
    const source = [
      "import { a } from '../modules/x.js';",
      "export * from './y.js';",
      "import './side-effect.js';",
      "const z = await import('../../app/z.js');",
      "import { b } from '@nestjs/common';",
    ].join('\n');
    expect(relativeImports(source)).toEqual([
      '../modules/x.js',
      './y.js',
      './side-effect.js',
      '../../app/z.js',
    ]);
  });

  it.each(Object.keys(FORBIDDEN))('%s/ imports nothing from the layers above it', (layer) => {
    expect(violations(layer)).toEqual([]);
  });
});
