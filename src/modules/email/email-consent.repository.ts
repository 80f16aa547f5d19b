import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { User } from '../../generated/prisma/client.js';

@Injectable()
export class EmailConsentRepository {
  /**
   * Withdraws marketing consent when it is given; returns the user when this call changed it, null when
   * there was nothing to change (already withdrawn, or no such user). Conditional, so concurrent clicks
   * record one withdrawal.
   */
  async withdraw(db: Db, userId: string, source: string, at: Date): Promise<User | null> {
    const { count } = await db.user.updateMany({
      where: { id: userId, marketingConsentGiven: true },
      data: { marketingConsentGiven: false, marketingConsentAt: at, marketingConsentSource: source },
    });
    if (count === 0) return null;
    await db.emailConsentEvent.create({ data: { userId, given: false, source, createdAt: at } });
    return db.user.findUnique({ where: { id: userId } });
  }

  /**
   * Gives marketing consent when it is not given (the double opt-in confirmation); returns the user when
   * this call changed it, null otherwise. Conditional, so two clicks record one grant.
   */
  async grant(db: Db, userId: string, source: string, at: Date): Promise<User | null> {
    const { count } = await db.user.updateMany({
      where: { id: userId, marketingConsentGiven: false, deletedAt: null },
      data: { marketingConsentGiven: true, marketingConsentAt: at, marketingConsentSource: source },
    });
    if (count === 0) return null;
    await db.emailConsentEvent.create({ data: { userId, given: true, source, createdAt: at } });
    return db.user.findUnique({ where: { id: userId } });
  }

  /** Users whose address is this one (case-insensitive): a complaint about mail we cannot tie to a row. */
  usersWithAddress(db: Db, address: string): Promise<Pick<User, 'id'>[]> {
    return db.$queryRaw<Pick<User, 'id'>[]>`
      SELECT id::text FROM users WHERE lower(email) = ${address.trim().toLowerCase()} LIMIT 10`;
  }

  async identityUserIdOf(db: Db, userId: string): Promise<string | null> {
    const user = await db.user.findUnique({ where: { id: userId }, select: { identityUserId: true } });
    return user?.identityUserId ?? null;
  }
}
