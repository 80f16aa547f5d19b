import { Injectable } from '@nestjs/common';
import { type Db, driverOf, type Tx } from '../../../infra/prisma/prisma.service.js';

export interface LockedUser {
  id: string;
  identity_user_id: string;
  current_tier: string;
  billing_customer_id: string | null;
}

const LOCK_SQL = `SELECT id, identity_user_id, current_tier, billing_customer_id FROM users WHERE id = $1::uuid FOR UPDATE`;

/**
 * The Billing module's view of users. `setCurrentTier` is the only writer of users.current_tier in the
 * whole code base (spec rule 3; test/billing/current-tier-writers.spec.ts keeps it that way).
 */
@Injectable()
export class BillingUsersRepository {
  /** Locks the user row until the caller's transaction ends (the same lock the credit ledger takes). */
  async lock(tx: Tx, userId: string): Promise<LockedUser | null> {
    const { rows } = await driverOf(tx).query<LockedUser>(LOCK_SQL, [userId]);
    return rows[0] ?? null;
  }

  async exists(db: Db, userId: string): Promise<boolean> {
    return (await db.user.count({ where: { id: userId } })) > 0;
  }

  /** When the user asked for the account's deletion (null: not pending deletion, or no such user). */
  async deletedAt(db: Db, userId: string): Promise<Date | null> {
    const user = await db.user.findUnique({ where: { id: userId }, select: { deletedAt: true } });
    return user?.deletedAt ?? null;
  }

  findByCustomerId(db: Db, customerId: string) {
    return db.user.findUnique({ where: { billingCustomerId: customerId }, select: { id: true } });
  }

  findIdentity(db: Db, userId: string) {
    return db.user.findUnique({ where: { id: userId }, select: { identityUserId: true } });
  }

  /**
   * Remembers the provider's customer id for later events that carry no checkout token. Never moves a
   * customer id between users, and never fails the transaction on the unique index.
   */
  async linkCustomer(tx: Tx, userId: string, customerId: string): Promise<void> {
    await tx.$executeRaw`
      UPDATE users SET billing_customer_id = ${customerId}
      WHERE id = ${userId}::uuid AND billing_customer_id IS NULL
        AND NOT EXISTS (SELECT 1 FROM users WHERE billing_customer_id = ${customerId})`;
  }

  async setCurrentTier(tx: Tx, userId: string, tier: string): Promise<void> {
    await tx.user.update({ where: { id: userId }, data: { currentTier: tier } });
  }
}
