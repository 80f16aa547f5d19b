import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';
import type { ApiKey, User } from '../../generated/prisma/client.js';

/**
 * The one writer of `api_keys` (docs/architecture.md, "Table ownership"): the owned-resource kit's
 * OwnedRepository runs create/list/revoke through this delegate; authentication reads and touches keys here.
 */
export const apiKeyRows = (db: Db) => db.apiKey;

@Injectable()
export class ApiKeysRepository {
  findBySecretHash(db: Db, secretHash: string): Promise<(ApiKey & { user: User }) | null> {
    return apiKeyRows(db).findUnique({ where: { secretHash }, include: { user: true } });
  }

  /** Stamps last_used_at; conditional, so concurrent requests write at most once a minute. */
  async touchLastUsed(db: Db, id: string): Promise<void> {
    await db.$executeRaw`
      UPDATE api_keys SET last_used_at = now()
      WHERE id = ${id}::uuid AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`;
  }
}
