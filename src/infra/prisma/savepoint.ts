import type { Tx } from './prisma.service.js';

const NAME = /^[a-z_][a-z0-9_]*$/;

/**
 * Runs `work` inside a savepoint of the transaction `tx`. When it throws, only what it did is undone (the
 * savepoint is rolled back) and the error is rethrown; the transaction itself goes on and can still commit
 * the work done before and after. Used where one transaction carries several independent units, such as
 * a batch of webhook events applied together.
 */
export async function inSavepoint<T>(tx: Tx, name: string, work: () => Promise<T>): Promise<T> {
  if (!NAME.test(name)) throw new Error(`invalid savepoint name: ${name}`);
  await tx.$executeRawUnsafe(`SAVEPOINT ${name}`);
  let result: T;
  try {
    result = await work();
  } catch (err) {
    await tx.$executeRawUnsafe(`ROLLBACK TO SAVEPOINT ${name}`);
    throw err;
  }
  await tx.$executeRawUnsafe(`RELEASE SAVEPOINT ${name}`);
  return result;
}
