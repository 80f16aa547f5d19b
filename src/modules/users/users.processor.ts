import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JobRunRecorder } from '../../infra/queue/job-run.recorder.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../infra/queue/worker-options.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { AccountDeletionService, type DeletionJob } from './account-deletion.service.js';
import { UserHooks } from './user-hooks.js';

@Processor(QUEUES.users, WORKER_OPTIONS)
export class UsersProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    recorder: JobRunRecorder,
    prisma: PrismaService,
    hooks: UserHooks,
    deletion: AccountDeletionService,
  ) {
    super(registry, recorder);
    this.handle(JOBS.postSignup, async (job: Job<{ userId: string }>) => {
      const user = await prisma.user.findUnique({ where: { id: job.data.userId } });
      // Deleted before the job ran: nothing to welcome.
      if (!user || user.deletedAt) return { skipped: true };
      await hooks.run('signup', user);
      return { hooks: hooks.names('signup') };
    });
    this.handle(JOBS.accountDeletionRequested, async (job: Job<DeletionJob>) => {
      // Restored (or already erased) before the job ran: the hooks (e.g. cancelling the subscription)
      // must not act on an account the user kept.
      const user = await deletion.pendingDeletion(job.data);
      if (!user) return { skipped: true };
      await hooks.run('deletion_requested', user);
      return { hooks: hooks.names('deletion_requested') };
    });
    this.handle(JOBS.emailChanged, async (job: Job<{ userId: string }>) => {
      const user = await prisma.user.findUnique({ where: { id: job.data.userId } });
      if (!user || user.deletedAt) return { skipped: true };
      await hooks.run('email_changed', user);
      return { hooks: hooks.names('email_changed') };
    });
    this.handle(JOBS.hardDeleteAccounts, () => deletion.hardDeleteDue(), { recordRun: true });
  }
}
