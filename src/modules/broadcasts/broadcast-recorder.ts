import { Injectable } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { sqlTransaction } from '../../infra/prisma/sql-transaction.js';
import { systemActor } from '../audit/audit.service.js';
import { type EmailRecord, EmailRecorder } from '../email/email-recorder.js';
import {
  BroadcastsRepository,
  type OutcomesWritten,
  type RecipientCounts,
  type RecipientOutcome,
} from './broadcasts.repository.js';

/** A recipient's outcome and the e-mail record it makes (null for an erased user: no log row, no audit). */
export interface PageRow extends RecipientOutcome {
  email: EmailRecord | null;
}

/**
 * Records a page's outcomes in one transaction: the recipient rows and the run's counters
 * (BroadcastsRepository), then, only for the recipients that statement changed, their e-mail log rows and
 * email.<status> audit entries (email/, EmailRecorder). One statement each, so a page costs three
 * statements whatever its size, and a concurrent delivery of the same run never records a recipient twice.
 */
@Injectable()
export class BroadcastRecorder {
  constructor(
    private readonly prisma: PrismaService,
    private readonly repository: BroadcastsRepository,
    private readonly email: EmailRecorder,
  ) {}

  /**
   * Settles the consent gate of a page and reserves the rest, atomically: the skipped recipients are
   * recorded for good, and the ones to send get `pending` rows carrying the batch key, before the provider
   * is called. Returns the members this call reserved (a concurrent delivery reserves each member once).
   */
  async reservePage(
    runId: string,
    skipped: PageRow[],
    toSend: string[],
    batchKey: string | null,
  ): Promise<{ recipientId: string; userId: string }[]> {
    if (skipped.length === 0 && toSend.length === 0) return [];
    const { reserved } = await this.write(runId, skipped, { userIds: toSend, batchKey });
    return reserved;
  }

  /** Records the outcome of pending recipients; returns what was added to the run's counters. */
  async settle(runId: string, rows: PageRow[]): Promise<RecipientCounts> {
    if (rows.length === 0) return { sent: 0, failed: 0, skipped: 0 };
    const { sent, failed, skipped } = await this.write(runId, rows);
    return { sent, failed, skipped };
  }

  private async write(
    runId: string,
    rows: PageRow[],
    reserve?: { userIds: string[]; batchKey: string | null },
  ): Promise<OutcomesWritten> {
    const outcomes = rows.map(({ email: _, ...outcome }) => outcome);
    // Nothing to log (a page whose members are all sendable): the one statement is atomic on its own.
    if (rows.every((row) => row.email === null))
      return this.repository.writeOutcomes(this.prisma.pool, runId, outcomes, reserve);
    return sqlTransaction(this.prisma.pool, async (tx) => {
      const written = await this.repository.writeOutcomes(tx, runId, outcomes, reserve);
      const emails = written.changed.flatMap((i) => rows[i].email ?? []);
      await this.email.recordMany(tx, systemActor('broadcast'), emails);
      return written;
    });
  }
}
