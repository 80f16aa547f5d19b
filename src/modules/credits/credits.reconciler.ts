import { Injectable, Logger } from '@nestjs/common';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { CreditsRepository } from './credits.repository.js';
import { MeteredCreditsService } from './metered-credits.service.js';
import { ORPHAN_AFTER_MS } from './orphan-window.js';

export { ORPHAN_AFTER_MS };
const BATCH = 200;
/** One run handles at most this many batches; the next tick takes the rest. */
const MAX_BATCHES = 25;

export interface ReconcileResult {
  refunded: number;
  credits: number;
}

/**
 * Refunds metered calls whose hold is still open 5 minutes after the reservation: the process died (or
 * lost the database) between the provider call and the settle. Each refund claims its hold in its own
 * transaction, so two reconcilers (or a reconciler and a late settle) never close one call twice.
 */
@Injectable()
export class CreditsReconciler {
  private readonly logger = new Logger(CreditsReconciler.name);

  constructor(
    private readonly prisma: PrismaService,
    private readonly holds: CreditsRepository,
    private readonly metered: MeteredCreditsService,
  ) {}

  async run(olderThanMs = ORPHAN_AFTER_MS): Promise<ReconcileResult> {
    const result: ReconcileResult = { refunded: 0, credits: 0 };
    for (let batch = 0; batch < MAX_BATCHES; batch += 1) {
      const jobIds = await this.holds.orphans(this.prisma, olderThanMs, BATCH);
      for (const jobId of jobIds) {
        const credits = await this.metered.refund(jobId, 'orphaned', olderThanMs);
        if (credits === null) continue;
        result.refunded += 1;
        result.credits += credits;
      }
      if (jobIds.length < BATCH) break;
    }
    if (result.refunded > 0) this.logger.warn(result, 'refunded orphaned metered-call reservations');
    return result;
  }
}
