import { Injectable } from '@nestjs/common';
import type { Db, Tx } from '../../../infra/prisma/prisma.service.js';

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

  async flagUser(db: Db, userId: string, disposable = true): Promise<void> {
    await db.user.updateMany({
      where: { id: userId, emailDisposable: !disposable },
      data: { emailDisposable: disposable },
    });
  }

  /** Serializes list replacements across processes for the rest of the transaction. */
  async lock(tx: Tx): Promise<void> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('disposable_domains'))`;
  }

  /**
   * Makes the table equal to `domains` inside the caller's transaction (readers see the old list until
   * commit); domains that stay keep their added_at. Array parameters, because Prisma's createMany spends
   * seconds of CPU on 10,000 rows.
   */
  async replaceAll(tx: Tx, domains: string[], source: string): Promise<void> {
    await tx.$executeRaw`DELETE FROM disposable_domains WHERE domain NOT IN (SELECT unnest(${domains}::text[]))`;
    await tx.$executeRaw`
      INSERT INTO disposable_domains (domain, source)
      SELECT d, ${source} FROM unnest(${domains}::text[]) AS d
      ON CONFLICT (domain) DO UPDATE SET source = EXCLUDED.source`;
  }
}
