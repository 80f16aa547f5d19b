import { Injectable } from '@nestjs/common';
import type { Tx } from '../../infra/prisma/prisma.service.js';

export interface AdminEmailHolder {
  id: string;
  identity_user_id: string;
  email: string;
  email_verified: boolean;
  deleted: boolean;
}

/**
 * The one writer of users.admin_email and admin_granted_at (docs/architecture.md, "Table ownership"):
 * AdminGuard binds an allowlisted address to one identity. Provided by the global AuthModule, so the
 * guard resolves wherever an admin controller is declared.
 */
@Injectable()
export class AdminEmailRepository {
  /** The identity holding the address, locked for the rest of the transaction. */
  async lockHolder(tx: Tx, email: string): Promise<AdminEmailHolder | null> {
    const holders = await tx.$queryRaw<AdminEmailHolder[]>`
      SELECT id, identity_user_id, email, email_verified, deleted_at IS NOT NULL AS deleted
      FROM users WHERE admin_email = ${email} FOR UPDATE`;
    return holders[0] ?? null;
  }

  /** Frees an address held by an identity that no longer qualifies (under the holder's row lock). */
  async release(tx: Tx, id: string): Promise<void> {
    await tx.$executeRaw`UPDATE users SET admin_email = NULL WHERE id = ${id}::uuid`;
  }

  /** Binds the address to this identity; 1 when it changed (audited by the caller), 0 when it held it. */
  bind(tx: Tx, id: string, email: string): Promise<number> {
    return tx.$executeRaw`
      UPDATE users SET admin_email = ${email}, admin_granted_at = now()
      WHERE id = ${id}::uuid AND admin_email IS DISTINCT FROM ${email}`;
  }
}
