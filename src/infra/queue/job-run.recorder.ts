import { Injectable } from '@nestjs/common';
import { PrismaService } from '../prisma/prisma.service.js';

/** Records the last run of each scheduled job (admin stats shows it). */
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
