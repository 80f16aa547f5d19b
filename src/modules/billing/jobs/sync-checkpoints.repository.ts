import { Injectable } from '@nestjs/common';
import type { Db } from '../../../infra/prisma/prisma.service.js';

/** Where a periodic provider sync stopped (sync_checkpoints); the billing backfill is its one user today. */
@Injectable()
export class SyncCheckpointsRepository {
  find(db: Db, name: string) {
    return db.syncCheckpoint.findUnique({ where: { name } });
  }

  /** Moves the checkpoint forward (after each page the run got through). */
  async advance(db: Db, name: string, checkpoint: string): Promise<void> {
    await db.syncCheckpoint.upsert({ where: { name }, create: { name, checkpoint }, update: { checkpoint } });
  }

  /** A finished run: when, and how many events it accepted. */
  async finished(db: Db, name: string, at: Date, processed: number): Promise<void> {
    await db.syncCheckpoint.upsert({
      where: { name },
      create: { name, lastRunAt: at, lastRunProcessed: processed },
      update: { lastRunAt: at, lastRunProcessed: processed },
    });
  }
}
