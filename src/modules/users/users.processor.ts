import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JobRunRecorder } from '../../infra/queue/job-run.recorder.js';
import { OnJob } from '../../infra/queue/on-job.decorator.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../infra/queue/worker-options.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { AccountDeletionService, type DeletionJob } from './account-deletion.service.js';
import { type UserEvent, UserHooks } from './user-hooks.js';
import { UsersRepository } from './users.repository.js';

@Processor(QUEUES.users, WORKER_OPTIONS)
export class UsersProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    recorder: JobRunRecorder,
    private readonly prisma: PrismaService,
    private readonly users: UsersRepository,
    private readonly hooks: UserHooks,
    private readonly deletion: AccountDeletionService,
  ) {
    super(registry, recorder);
  }

  @OnJob(JOBS.postSignup)
  postSignup(job: Job<{ userId: string }>) {
    return this.runHooks('signup', job.data.userId);
  }

  @OnJob(JOBS.accountDeletionRequested)
  async deletionRequested(job: Job<DeletionJob>) {
    // Restored (or already erased) before the job ran: the hooks (e.g. cancelling the subscription)
    // must not act on an account the user kept.
    const user = await this.deletion.pendingDeletion(job.data);
    if (!user) return { skipped: true };
    await this.hooks.run('deletion_requested', user);
    return { hooks: this.hooks.names('deletion_requested') };
  }

  @OnJob(JOBS.emailChanged)
  emailChanged(job: Job<{ userId: string }>) {
    return this.runHooks('email_changed', job.data.userId);
  }

  @OnJob(JOBS.hardDeleteAccounts)
  hardDeleteDue() {
    return this.deletion.hardDeleteDue();
  }

  /** The hooks of a live user; a user deleted before the job ran is skipped. */
  private async runHooks(name: Exclude<UserEvent, 'deletion_requested'>, userId: string) {
    const user = await this.users.findById(this.prisma, userId);
    if (!user || user.deletedAt) return { skipped: true };
    await this.hooks.run(name, user);
    return { hooks: this.hooks.names(name) };
  }
}
