import type { PrismaService, Tx } from '../../src/infra/prisma/prisma.service.js';

/**
 * A transaction that runs `work` (typically: take a lock, write a row) and then stays open until released,
 * so a test can start a waiter behind it. Resolves once `work` is done; `release()` lets it commit, `done`
 * is its end.
 */
export async function holding(
  prisma: PrismaService,
  work: (tx: Tx) => Promise<unknown>,
): Promise<{ release: () => void; done: Promise<void> }> {
  let holderLocked!: () => void;
  const locked = new Promise<void>((resolve) => (holderLocked = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const done = prisma.$transaction(async (tx) => {
    await work(tx);
    holderLocked();
    await released;
  });
  await locked;
  return { release, done };
}
