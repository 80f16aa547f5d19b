// Generates src/metadata.ts with the @nestjs/swagger plugin's metadata generator. The plugin itself does
// not run under @swc/jest, so both the build and the tests load this file instead
// (SwaggerModule.loadPluginMetadata). The plugin reads only *.dto.ts and *.entity.ts files.
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(join(root, 'node_modules', '@nestjs', 'cli'))) process.exit(0);
// The Docker build runs `npm ci` (and so this postinstall hook) before it copies the TypeScript configs
// and the sources, for layer caching; `npm run build` runs this script again (prebuild) once they are there.
// (src/ alone proves nothing: prisma generate has already written src/generated/ by then.)
const missing = ['tsconfig.build.json', join('src', 'main.ts')].filter(
  (file) => !existsSync(join(root, file)),
);
if (missing.length > 0) {
  console.log(`swagger metadata: skipped, ${missing.join(' and ')} not present yet (prebuild generates it)`);
  process.exit(0);
}

const { PluginMetadataGenerator } =
  await import('@nestjs/cli/lib/compiler/plugins/plugin-metadata-generator.js');
const { ReadonlyVisitor } = await import('@nestjs/swagger/plugin');

process.chdir(root);
// The generator type-checks the project, which imports src/metadata.ts itself: on a clean clone give it
// an empty one first.
const target = join(root, 'src', 'metadata.ts');
if (!existsSync(target)) {
  writeFileSync(
    target,
    "export default async () => ({ '@nestjs/swagger': { models: [], controllers: [] } });\n",
  );
}
new PluginMetadataGenerator().generate({
  visitors: [
    new ReadonlyVisitor({
      introspectComments: true,
      classValidatorShim: true,
      pathToSource: join(root, 'src'),
      dtoFileNameSuffix: ['.dto.ts', '.entity.ts'],
    }),
  ],
  outputDir: join(root, 'src'),
  filename: 'metadata.ts',
  tsconfigPath: 'tsconfig.build.json',
  printDiagnostics: false,
});
