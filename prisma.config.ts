import { defineConfig } from 'prisma/config';

// process.env with a default (not prisma's env()): `prisma generate` must work offline with no database.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: {
    url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/subscription_service',
  },
});
