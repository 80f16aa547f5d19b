import { Injectable } from '@nestjs/common';
import { Readable } from 'node:stream';
import { NotFoundError } from '../../common/errors/app-error.js';
import { snakeCase } from '../../common/naming.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import type { User } from '../../generated/prisma/client.js';
import { AuditService, userActor } from '../audit/audit.service.js';
import { CreditsService } from '../credits/credits.service.js';
import { AccountExportRepository, type ExportCursor, type ExportRow } from './account-export.repository.js';
import { UsersRepository } from './users.repository.js';

/** Top-level keys to snake_case (JSON column contents stay as stored), dates to ISO strings. */
export function toExportJson(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    out[snakeCase(key)] = value instanceof Date ? value.toISOString() : value;
  }
  return out;
}

export interface ExportStream {
  filename: string;
  stream: Readable;
}

/**
 * GET /account/me/export: one JSON document with the profile, every user-linked table and the user's
 * audit entries. Written as a stream: each table is read in keyset pages of `pageSize` rows and each page
 * is serialized and handed to the response before the next is read, so memory stays flat however many
 * rows a user has, and the response's backpressure paces the reads.
 */
@Injectable()
export class AccountExportService {
  /** Rows per query; tests lower it to prove paging. */
  pageSize = 1000;

  constructor(
    private readonly prisma: PrismaService,
    private readonly users: UsersRepository,
    private readonly exportRepository: AccountExportRepository,
    private readonly audit: AuditService,
    private readonly credits: CreditsService,
  ) {}

  /** Audits the export and returns the stream; everything that can fail early fails before streaming. */
  async open(actor: User): Promise<ExportStream> {
    const user = await this.users.findById(this.prisma, actor.id);
    if (!user) throw new NotFoundError('The user does not exist.', 'user_not_found');
    const generatedAt = new Date();
    await this.audit.recordStandalone({
      actor: userActor(user.identityUserId),
      action: 'user.exported',
      userId: user.identityUserId,
      resourceType: 'user',
      resourceId: user.id,
    });
    return {
      filename: `account-export-${generatedAt.toISOString().slice(0, 10)}.json`,
      stream: Readable.from(this.chunks(user, generatedAt), { objectMode: false }),
    };
  }

  async *chunks(user: User, generatedAt: Date): AsyncGenerator<string> {
    yield `{"generated_at":${JSON.stringify(generatedAt.toISOString())},"user":${JSON.stringify(toExportJson(user))}`;
    // The same summary as GET /api/v1/credits (CreditsService owns when plan credits expire).
    const credits = await this.credits.summary(user.id);
    yield `,"credits":${JSON.stringify({
      balance: credits.balance,
      plan_remaining: credits.planRemaining,
      purchased_remaining: credits.purchasedRemaining,
      plan_expires_at: credits.planExpiresAt?.toISOString() ?? null,
    })}`;
    for (const section of this.exportRepository.sections) {
      yield `,${JSON.stringify(section.name)}:[`;
      let cursor: ExportCursor = null;
      let first = true;
      for (;;) {
        const rows: ExportRow[] = await section.page(this.prisma, user, cursor, this.pageSize);
        if (rows.length === 0) break;
        const body = rows.map((row) => JSON.stringify(toExportJson(row))).join(',');
        yield first ? body : `,${body}`;
        first = false;
        const last = rows[rows.length - 1];
        cursor = { createdAt: last.createdAt, id: last.id };
        if (rows.length < this.pageSize) break;
      }
      yield ']';
    }
    yield '}';
  }
}
