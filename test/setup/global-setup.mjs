// Once per `npm test`: migrate a template database with the project's own migration script. Every test
// file then clones it (CREATE DATABASE ... TEMPLATE), which is much faster than migrating per file.
import { randomBytes } from 'node:crypto';
import { deploy } from '../../scripts/migrate.mjs';

export default async function globalSetup() {
  const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const server = process.env.TEST_PG_SERVER_URL ?? 'postgresql://postgres@127.0.0.1:5432';
  const template = `sst_${runId}_tpl`;
  await deploy({ databaseUrl: `${server}/${template}` });
  process.env.TEST_RUN_ID = runId;
  process.env.TEST_PG_SERVER_URL = server;
  process.env.TEST_DB_TEMPLATE = template;
  process.env.TEST_REDIS_URL ??= 'redis://127.0.0.1:6379';
}
