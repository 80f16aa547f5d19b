import type { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { waitFor } from './wait.js';

/** The run once it has ended (`done` or `failed`), waiting up to `timeoutMs`. */
export const runFinished = (prisma: PrismaService, id: string, timeoutMs = 20_000) =>
  waitFor(async () => {
    const current = await prisma.broadcastRun.findUniqueOrThrow({ where: { id } });
    return current.status === 'done' || current.status === 'failed' ? current : null;
  }, timeoutMs);

/**
 * A sign-up day of its own for one test (`n` of January of `year`): users created at `createdAt` are the
 * only ones the `audience` reaches, so other tests' users stay out of its pages.
 */
export const signupDay = (year: number, n: number) => {
  const start = new Date(Date.UTC(year, 0, n));
  return {
    createdAt: new Date(start.getTime() + 3_600_000),
    audience: {
      signed_up_after: start.toISOString(),
      signed_up_before: new Date(start.getTime() + 86_400_000).toISOString(),
    },
  };
};
