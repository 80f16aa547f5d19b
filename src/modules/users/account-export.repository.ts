import { Injectable } from '@nestjs/common';
import type { Db } from '../../infra/prisma/prisma.service.js';

/** Position after the last row of the previous page: keyset paging on (created_at, id). */
export type ExportCursor = { createdAt: Date; id: string } | null;

export interface ExportRow {
  id: string;
  createdAt: Date;
  [column: string]: unknown;
}

/** One user-linked table: its name in the bundle and how to read one page of the user's rows. */
export interface ExportSection {
  name: string;
  page(
    db: Db,
    owner: { id: string; identityUserId: string },
    after: ExportCursor,
    take: number,
  ): Promise<ExportRow[]>;
}

const ORDER = [{ createdAt: 'asc' as const }, { id: 'asc' as const }];

const after = (cursor: ExportCursor) =>
  cursor
    ? {
        OR: [{ createdAt: { gt: cursor.createdAt } }, { createdAt: cursor.createdAt, id: { gt: cursor.id } }],
      }
    : {};

/**
 * Every table that holds rows linked to a user, in bundle order. Adding a user-linked table to the schema
 * means adding it here (the export test compares this list with the schema's relations of User).
 */
export const EXPORT_SECTIONS: ExportSection[] = [
  {
    name: 'subscriptions',
    page: (db, owner, cursor, take) =>
      db.subscription.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'credit_transactions',
    page: (db, owner, cursor, take) =>
      db.creditTransaction.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'credit_holds',
    // Metered calls in flight (keyed by job id, no id column): the credits reserved for them.
    page: async (db, owner, cursor, take) => {
      const rows = await db.creditHold.findMany({
        where: {
          userId: owner.id,
          ...(cursor
            ? {
                OR: [
                  { createdAt: { gt: cursor.createdAt } },
                  { createdAt: cursor.createdAt, jobId: { gt: cursor.id } },
                ],
              }
            : {}),
        },
        orderBy: [{ createdAt: 'asc' }, { jobId: 'asc' }],
        take,
      });
      return rows.map((row) => ({ id: row.jobId, ...row }));
    },
  },
  {
    name: 'saved_searches',
    page: (db, owner, cursor, take) =>
      db.savedSearch.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'workspaces',
    page: (db, owner, cursor, take) =>
      db.workspace.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'api_keys',
    // An explicit column list: the secret hash never leaves the database.
    page: (db, owner, cursor, take) =>
      db.apiKey.findMany({
        where: { userId: owner.id, ...after(cursor) },
        orderBy: ORDER,
        take,
        select: {
          id: true,
          name: true,
          prefix: true,
          lastUsedAt: true,
          expiresAt: true,
          revokedAt: true,
          createdAt: true,
          updatedAt: true,
        },
      }),
  },
  {
    name: 'feedback',
    page: (db, owner, cursor, take) =>
      db.feedback.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'broadcast_recipients',
    // A `pending` row is a broadcast handed to the provider whose outcome is not recorded yet (or never
    // was: the run failed); it is exported as such. The batch idempotency key is provider plumbing.
    page: async (db, owner, cursor, take) => {
      const rows = await db.broadcastRecipient.findMany({
        where: { userId: owner.id, ...after(cursor) },
        orderBy: ORDER,
        take,
        omit: { batchKey: true },
        include: { run: { select: { templateKey: true, kind: true } } },
      });
      return rows.map(({ run, ...row }) => ({ ...row, templateKey: run.templateKey, kind: run.kind }));
    },
  },
  {
    name: 'email_consent_events',
    page: (db, owner, cursor, take) =>
      db.emailConsentEvent.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'email_messages',
    // Bodies are only kept by the local console provider; the log of what was sent is the personal data.
    page: (db, owner, cursor, take) =>
      db.emailMessage.findMany({
        where: { userId: owner.id, ...after(cursor) },
        orderBy: ORDER,
        take,
        omit: { html: true, text: true },
      }),
  },
  {
    name: 'payments',
    page: (db, owner, cursor, take) =>
      db.payment.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'billing_adjustments',
    page: (db, owner, cursor, take) =>
      db.billingAdjustment.findMany({ where: { userId: owner.id, ...after(cursor) }, orderBy: ORDER, take }),
  },
  {
    name: 'audit_logs',
    // Audit entries link the identity user id (spec), not the row id.
    page: (db, owner, cursor, take) =>
      db.auditLog.findMany({
        where: { userId: owner.identityUserId, ...after(cursor) },
        orderBy: ORDER,
        take,
      }),
  },
];

@Injectable()
export class AccountExportRepository {
  readonly sections = EXPORT_SECTIONS;
}
