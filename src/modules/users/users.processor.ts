import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { PrismaService } from '../../infra/prisma/prisma.service.js';
import { UserHooks } from './user-hooks.js';

@Processor(QUEUES.users)
export class UsersProcessor extends JobProcessor {
  constructor(registry: JobRegistry, prisma: PrismaService, hooks: UserHooks) {
    super(registry);
    this.handle(JOBS.postSignup, async (job: Job<{ userId: string }>) => {
      const user = await prisma.user.findUnique({ where: { id: job.data.userId } });
      // Deleted before the job ran: nothing to welcome.
      if (!user || user.deletedAt) return { skipped: true };
      await hooks.run('signup', user);
      return { hooks: hooks.names('signup') };
    });
  }
}
