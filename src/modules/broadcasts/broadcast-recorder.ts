import { Injectable } from '@nestjs/common';
import { systemActor } from '../audit/audit.service.js';
import { type EmailRecord, EmailRecorder } from '../email/email-recorder.js';
import {
  BroadcastsRepository,
  type OutcomesWritten,
  type RecipientCounts,
  type RecipientOutcome,
  type StatementParts,
} from './broadcasts.repository.js';

/** A recipient's outcome and the e-mail record it makes (null for an erased user: no log row, no audit). */
export interface PageRow extends RecipientOutcome {
  email: EmailRecord | null;
}

/**
 * Records a page's outcomes in one statement, each table by its owner: the recipient rows and the run's
 * counters (BroadcastsRepository), and, only for the recipients that statement changed, their e-mail log
 * rows and email.<status> audit entries (parts written by email/ and audit/, EmailRecorder). One round trip
 * per page, atomic, and a concurrent delivery of the same run never records a recipient twice.
 */
@Injectable()
export class BroadcastRecorder {
  constructor(
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

  private write(
    runId: string,
    rows: PageRow[],
    reserve?: { userIds: string[]; batchKey: string | null },
  ): Promise<OutcomesWritten> {
    const outcomes = rows.map(({ email: _, ...outcome }) => outcome);
    const records = rows.flatMap((row, i) => (row.email ? [{ ...row.email, ord: i + 1 }] : []));
    const parts: StatementParts | undefined =
      records.length === 0
        ? undefined
        : (params, changed) => this.email.recordManyParts(params, systemActor('broadcast'), records, changed);
    return this.repository.writeOutcomes(runId, outcomes, reserve, parts);
  }
}
