import 'reflect-metadata';
import { Processor } from '@nestjs/bullmq';
import type { Job } from 'bullmq';
import { JobProcessor } from './job-processor.js';
import { JobRegistry } from './job-registry.js';
import type { JobRunRecorder } from './job-run.recorder.js';
import { OnJob } from './on-job.decorator.js';
import { JOBS, QUEUES } from './queues.js';

const recorder = {
  track: (_name: string, run: () => Promise<unknown>) => run().then((result) => ({ recorded: result })),
} as unknown as JobRunRecorder;

describe('@OnJob handlers', () => {
  it('registers each decorated method for its job and calls it with the job, on the instance', async () => {
    @Processor(QUEUES.users)
    class UsersLike extends JobProcessor {
      readonly seen: string[] = [];
      constructor(registry: JobRegistry) {
        super(registry, recorder);
      }

      @OnJob(JOBS.postSignup)
      signup(job: Job<{ userId: string }>) {
        this.seen.push(job.data.userId);
        return Promise.resolve('welcomed');
      }

      @OnJob(JOBS.hardDeleteAccounts)
      hardDelete() {
        return Promise.resolve('deleted');
      }
    }
    const registry = new JobRegistry();
    const processor = new UsersLike(registry);
    const job = (name: string, data: object) => ({ name, data, queueName: QUEUES.users }) as unknown as Job;
    expect(await processor.process(job(JOBS.postSignup.name, { userId: 'u1' }))).toBe('welcomed');
    expect(processor.seen).toEqual(['u1']);
    // A scheduled job's run goes through the recorder (admin stats lists its last run).
    expect(await processor.process(job(JOBS.hardDeleteAccounts.name, {}))).toEqual({ recorded: 'deleted' });
    await expect(processor.process(job(JOBS.emailChanged.name, {}))).rejects.toThrow('no handler');
    expect(registry.missing()).toContain(`${QUEUES.users}/${JOBS.emailChanged.name}`);
    expect(registry.missing()).not.toContain(`${QUEUES.users}/${JOBS.postSignup.name}`);
  });

  it('refuses a handler declared on the processor of another queue', () => {
    @Processor(QUEUES.email)
    class Misplaced extends JobProcessor {
      constructor(registry: JobRegistry) {
        super(registry, recorder);
      }

      @OnJob(JOBS.postSignup)
      signup() {
        return Promise.resolve();
      }
    }
    expect(() => new Misplaced(new JobRegistry())).toThrow('belongs to queue users');
  });

  it('refuses a scheduled job in a processor that cannot record its runs', () => {
    @Processor(QUEUES.credits)
    class Unrecorded extends JobProcessor {
      constructor(registry: JobRegistry) {
        super(registry);
      }

      @OnJob(JOBS.reconcileCredits)
      reconcile() {
        return Promise.resolve();
      }
    }
    expect(() => new Unrecorded(new JobRegistry())).toThrow('must record its runs');
  });
});
