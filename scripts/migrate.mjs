// Prisma migrations without Prisma's native schema engine (it cannot be downloaded here): the
// WebAssembly schema engine does the planning and the bookkeeping, @prisma/adapter-pg talks to PostgreSQL.
//
//   node scripts/migrate.mjs deploy         apply pending migrations (creates the database if missing)
//   node scripts/migrate.mjs create <name>  write prisma/migrations/<timestamp>_<name>/migration.sql
//   node scripts/migrate.mjs status         applied / pending / failed migrations; exit 1 unless up to date
//   node scripts/migrate.mjs check          schema.prisma vs the migrations folder; exit 1 if a migration is missing
//   node scripts/migrate.mjs drift          schema.prisma vs the live database; exit 1 on drift
//
// Reads .env and works on the database `npm start` uses (scripts/lib/local-database.mjs): DATABASE_URL,
// else its embedded PostgreSQL. The parts live in scripts/migrate/ (connection, engine, migrations).
//
// Also a library (see the exported functions). Every call opens and closes its own connections.
import { pathToFileURL } from 'node:url';
import { loadDotEnv } from './lib/env.mjs';
import { localDatabase } from './lib/local-database.mjs';
import { check, create, deploy, drift, status } from './migrate/migrations.mjs';

export {
  DEFAULT_DATABASE_URL,
  MIGRATIONS_DIR,
  SCHEMA_PATH,
  dropDatabase,
  ensureDatabase,
} from './migrate/connection.mjs';
export { checksum, check, create, deploy, drift, loadMigrations, status } from './migrate/migrations.mjs';

async function main([command, ...args]) {
  const log = (line) => console.log(line);
  // The same .env and the same database as `npm start` (its embedded PostgreSQL unless DATABASE_URL
  // or LOCAL_DB says otherwise); the process environment wins over the file.
  loadDotEnv();
  const { url: databaseUrl, source } = localDatabase();
  if (command !== 'check')
    console.error(`database: ${databaseUrl.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')} (${source})`);
  switch (command) {
    case 'deploy':
      await deploy({ databaseUrl, log });
      return 0;
    case 'create':
      await create({ databaseUrl, name: args.join('_'), log });
      return 0;
    case 'status': {
      const result = await status({ databaseUrl });
      console.log(`${result.database}${result.databaseExists ? '' : ' (does not exist yet)'}`);
      for (const { name, finishedAt } of result.applied)
        console.log(`  applied  ${name}  ${finishedAt.toISOString()}`);
      for (const { name, logs } of result.failed)
        console.log(`  FAILED   ${name}${logs ? `\n${logs.replace(/^/gm, '           ')}` : ''}`);
      for (const name of result.pending) console.log(`  pending  ${name}`);
      for (const name of result.edited)
        console.log(`  EDITED   ${name} (migration.sql changed after it was applied)`);
      for (const name of result.unknown)
        console.log(`  unknown  ${name} (applied, but not in prisma/migrations)`);
      console.log(
        result.ok
          ? `up to date (${result.applied.length} applied)`
          : `${result.pending.length} pending, ${result.failed.length} failed: run \`npm run db:migrate\``,
      );
      return result.ok ? 0 : 1;
    }
    case 'check': {
      const { ok, sql } = await check({ databaseUrl });
      if (ok) {
        console.log('ok: prisma/migrations matches schema.prisma');
        return 0;
      }
      console.log('schema.prisma has changes that no migration covers; missing SQL:\n');
      console.log(sql);
      console.log('create it with: npm run db:migrate:create -- <name>');
      return 1;
    }
    case 'drift': {
      const { ok, sql } = await drift({ databaseUrl });
      if (ok) {
        console.log('ok: the database matches schema.prisma');
        return 0;
      }
      console.log('the database differs from schema.prisma; SQL that would align it:\n');
      console.log(sql);
      return 1;
    }
    default:
      console.error('usage: node scripts/migrate.mjs deploy | create <name> | status | check | drift');
      return 2;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // Exit explicitly: the engine's timers and pg's sockets must not decide when the CLI ends.
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error) => {
      console.error(`migrate ${process.argv[2]} failed: ${error.message}`);
      if (process.env.MIGRATE_DEBUG) console.error(error);
      process.exit(1);
    },
  );
}
