import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../../infra/prisma/prisma.service.js';

const INSERT_CHUNK = 5000;

@Injectable()
export class DisposableDomainsRepository {
  count(db: Db): Promise<number> {
    return db.disposableDomain.count();
  }

  async anySource(db: Db): Promise<string | null> {
    const row = await db.disposableDomain.findFirst({ select: { source: true } });
    return row?.source ?? null;
  }

  async anyOf(db: Db, domains: string[]): Promise<boolean> {
    if (domains.length === 0) return false;
    const row = await db.disposableDomain.findFirst({
      where: { domain: { in: domains } },
      select: { domain: true },
    });
    return row !== null;
  }

  async flagUser(db: Db, userId: string): Promise<void> {
    await db.user.updateMany({
      where: { id: userId, emailDisposable: false },
      data: { emailDisposable: true },
    });
  }

  /** Serializes list replacements across processes for the rest of the transaction. */
  async lock(tx: Tx): Promise<void> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('disposable_domains'))`;
  }

  /** Swaps the whole list inside the caller's transaction: readers see the old list until commit. */
  async replaceAll(tx: Tx, domains: string[], source: string): Promise<void> {
    await tx.disposableDomain.deleteMany({});
    for (let i = 0; i < domains.length; i += INSERT_CHUNK) {
      await tx.disposableDomain.createMany({
        data: domains.slice(i, i + INSERT_CHUNK).map((domain) => ({ domain, source })),
        skipDuplicates: true,
      });
    }
  }
}
