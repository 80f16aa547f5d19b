// A process that start:dev keeps ready for the next restart: it has already loaded the heavy dependencies
// (most of a Nest boot is loading node_modules, about 5 s of the 7 on a busy 2-core machine) and waits
// for the entry point to run, sent over IPC once the edit is compiled. The application code itself is
// imported only then, so it is always the fresh build. Dependencies resolve from the repository's
// node_modules, the same module instances the entry point imports.
import { pathToFileURL } from 'node:url';

const HEAVY = [
  'reflect-metadata',
  '@nestjs/core',
  '@nestjs/common',
  '@nestjs/platform-express',
  '@nestjs/swagger',
  '@nestjs/bullmq',
  '@nestjs/terminus',
  '@nestjs/schedule',
  '@nestjs/passport',
  'bullmq',
  'ioredis',
  'pg',
  '@prisma/adapter-pg',
  '@prisma/client/runtime/client',
  'nestjs-pino',
  'class-validator',
  'class-transformer',
  'zod',
  'prom-client',
  'jwks-rsa',
  'passport-jwt',
  'helmet',
  'rate-limiter-flexible',
];

// Anything missing or renamed only costs the time it would have saved.
const ready = Promise.allSettled(HEAVY.map((name) => import(name)));

process.once('message', async ({ entry }) => {
  await ready;
  process.channel?.unref();
  process.argv[1] = entry;
  await import(pathToFileURL(entry).href);
});
