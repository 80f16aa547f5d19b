import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { isFinalAttempt, JobProcessor } from '../../infra/queue/job-processor.js';
import { JobRegistry } from '../../infra/queue/job-registry.js';
import { JobRunRecorder } from '../../infra/queue/job-run.recorder.js';
import { OnJob } from '../../infra/queue/on-job.decorator.js';
import { JOBS, QUEUES } from '../../infra/queue/queues.js';
import { WORKER_OPTIONS } from '../../infra/queue/worker-options.js';
import { DisposableDomainsService } from './disposable/disposable-domains.service.js';
import { EmailService } from './email.service.js';
import type { SendEmailJob } from './email.types.js';

@Processor(QUEUES.email, WORKER_OPTIONS)
export class EmailProcessor extends JobProcessor {
  constructor(
    registry: JobRegistry,
    recorder: JobRunRecorder,
    private readonly email: EmailService,
    private readonly blocklist: DisposableDomainsService,
  ) {
    super(registry, recorder);
  }

  @OnJob(JOBS.sendEmail)
  async sendEmail(job: Job<SendEmailJob>) {
    const outcome = await this.email.sendTemplate(job.data, { finalAttempt: isFinalAttempt(job) });
    return { status: outcome.status, reason: outcome.reason };
  }

  @OnJob(JOBS.refreshBlocklist)
  refreshBlocklist() {
    return this.blocklist.refresh();
  }
}
