import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { User } from '../../generated/prisma/client.js';

@Injectable()
export class UsersRepository {
  findById(db: Db, id: string): Promise<User | null> {
    return db.user.findUnique({ where: { id } });
  }

  findByIdentityId(db: Db, identityUserId: string): Promise<User | null> {
    return db.user.findUnique({ where: { identityUserId } });
  }

  /**
   * Inserts the user unless a row with this identity id exists. Concurrent callers (the identity webhook
   * and a just-in-time token) end with one row; exactly one of them sees `inserted: true`.
   */
  async insertIfAbsent(
    db: Db,
    identityUserId: string,
    email: string,
  ): Promise<{ user: User; inserted: boolean }> {
    const rows = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO users (id, identity_user_id, email)
      VALUES (gen_random_uuid(), ${identityUserId}, ${email})
      ON CONFLICT (identity_user_id) DO NOTHING
      RETURNING id`;
    const user = await db.user.findUniqueOrThrow({ where: { identityUserId } });
    return { user, inserted: rows.length === 1 };
  }

  /** Marks activity at most once an hour per user (a conditional update, no write otherwise). */
  async touchLastActive(db: Db, id: string): Promise<void> {
    await db.$executeRaw`
      UPDATE users SET last_active_at = now()
      WHERE id = ${id}::uuid AND (last_active_at IS NULL OR last_active_at < now() - interval '1 hour')`;
  }
}
