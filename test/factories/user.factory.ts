import { randomUUID } from 'node:crypto';
import type { Prisma, PrismaClient, User } from '../../src/generated/prisma/client.js';

/** Anything that holds the `user` delegate: the PrismaService of an app, a bare client or a transaction. */
type UserDb = Pick<PrismaClient, 'user'>;

/**
 * A user row with a fresh identity id (`user_<8 hex>`) and an e-mail derived from it unless `data` says
 * otherwise. The one user factory of the suites: billing, credits and platform tests all start here.
 */
export function createUser(db: UserDb, data: Partial<Prisma.UserUncheckedCreateInput> = {}): Promise<User> {
  const identityUserId = data.identityUserId ?? `user_${randomUUID().slice(0, 8)}`;
  return db.user.create({
    data: { ...data, identityUserId, email: data.email ?? `${identityUserId}@example.com` },
  });
}
