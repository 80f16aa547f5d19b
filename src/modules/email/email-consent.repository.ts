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
}
