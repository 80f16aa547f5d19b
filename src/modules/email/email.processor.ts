import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { EmailService } from './email.service.js';
import type { SendEmailJob } from './email.types.js';

@Processor(QUEUES.email)
export class EmailProcessor extends JobProcessor {
  constructor(registry: JobRegistry, email: EmailService) {
    super(registry);
    this.handle(JOBS.sendEmail, async (job: Job<SendEmailJob>) => {
      const outcome = await email.sendTemplate(job.data);
      return { status: outcome.status, reason: outcome.reason };
    });
  }
}
