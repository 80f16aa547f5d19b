import { Injectable } from '@nestjs/common';
import type { Db } from '../../../infra/prisma/prisma.service.js';
import type { EmailSuppression } from '../../../generated/prisma/client.js';
import { normalizeAddress } from '../send-policy.js';

export type SuppressionReason = 'bounce' | 'complaint' | 'manual';

/** The only writer of email_suppressions. Addresses are stored normalized (see normalizeAddress). */
@Injectable()
export class EmailSuppressionsRepository {
  /**
   * Adds the address unless it is suppressed already; the new entry's id (what its audit entries name,
   * never the address), or null when the address was on the list already.
   */
  async add(
    db: Db,
    address: string,
    reason: SuppressionReason,
    sourceEventId: string | null,
  ): Promise<string | null> {
    const rows = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO email_suppressions (email, reason, source_event_id, created_at)
      VALUES (${normalizeAddress(address)}, ${reason}, ${sourceEventId}, now())
      ON CONFLICT (email) DO NOTHING
      RETURNING id::text`;
    return rows[0]?.id ?? null;
  }

  /** The subset of `addresses` (normalized) that is suppressed: one indexed lookup for a whole page. */
  async suppressedAmong(db: Db, addresses: string[]): Promise<Set<string>> {
    if (addresses.length === 0) return new Set();
    const rows = await db.emailSuppression.findMany({
      where: { email: { in: [...new Set(addresses.map(normalizeAddress))] } },
      select: { email: true },
    });
    return new Set(rows.map((row) => row.email));
  }

  async list(
    db: Db,
    filter: { reason?: SuppressionReason },
    skip: number,
    take: number,
  ): Promise<{ items: EmailSuppression[]; total: number }> {
    const where = filter.reason ? { reason: filter.reason } : {};
    const [items, total] = await Promise.all([
      db.emailSuppression.findMany({ where, orderBy: [{ createdAt: 'desc' }, { email: 'asc' }], skip, take }),
      db.emailSuppression.count({ where }),
    ]);
    return { items, total };
  }

  /** Removes an entry; the removed row, or null when the address was not suppressed. */
  async remove(db: Db, address: string): Promise<EmailSuppression | null> {
    const rows = await db.$queryRaw<EmailSuppression[]>`
      DELETE FROM email_suppressions WHERE email = ${normalizeAddress(address)}
      RETURNING email, id::text, reason, source_event_id AS "sourceEventId", created_at AS "createdAt"`;
    return rows[0] ?? null;
  }
}
