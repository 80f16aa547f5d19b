// Runs `prisma generate` offline. The Prisma CLI insists on a schema-engine binary that it cannot
// download here; generate does not use it, so point it at a stub that exits 1 (an empty stub would make
// `prisma migrate deploy` report success without applying anything). Migrations use scripts/migrate.mjs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'node_modules', 'prisma', 'build', 'index.js');
if (!existsSync(cli)) {
  // `npm ci --omit=dev` in the production image: the client was generated in the build stage.
  process.exit(0);
}
const result = spawnSync(process.execPath, [cli, 'generate'], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: join(root, 'scripts', 'schema-engine-stub.sh'),
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
});
process.exit(result.status ?? 1);
