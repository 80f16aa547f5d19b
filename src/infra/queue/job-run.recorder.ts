import { Injectable } from '@nestjs/common';
import { PrismaService } from '../prisma/prisma.service.js';

/**
 * Records the last run of each scheduled job (admin stats shows it; the scheduler's catch-up reads when
 * each last started: the durable mark that a tick ran, after BullMQ has forgotten its job).
 */
@Injectable()
export class JobRunRecorder {
  constructor(private readonly prisma: PrismaService) {}

  async track<T>(name: string, run: () => Promise<T>): Promise<T> {
    const started = new Date();
    await this.prisma.jobRun.upsert({
      where: { name },
      create: { name, lastStartedAt: started, lastStatus: 'running', runs: 0 },
      update: { lastStartedAt: started, lastStatus: 'running' },
    });
    try {
      const result = await run();
      await this.finish(name, started, 'ok', null);
      return result;
    } catch (err) {
      await this.finish(name, started, 'failed', (err as Error).message).catch(() => undefined);
      throw err;
    }
  }

  /** When each of these jobs last started a run; a job that never ran is absent. */
  async lastStarts(names: string[]): Promise<Map<string, Date>> {
    const rows = await this.prisma.jobRun.findMany({
      where: { name: { in: names }, lastStartedAt: { not: null } },
      select: { name: true, lastStartedAt: true },
    });
    const starts = new Map<string, Date>();
    for (const row of rows) if (row.lastStartedAt) starts.set(row.name, row.lastStartedAt);
    return starts;
  }

  private async finish(name: string, started: Date, status: string, error: string | null): Promise<void> {
    const finished = new Date();
    await this.prisma.jobRun.update({
      where: { name },
      data: {
        lastFinishedAt: finished,
        lastStatus: status,
        lastError: error?.slice(0, 1000) ?? null,
        lastDurationMs: finished.getTime() - started.getTime(),
        runs: { increment: 1 },
      },
    });
  }
}
