import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { WorkerModule } from '../../src/app/worker.module.js';
import { JobScheduler } from '../../src/infra/queue/job-scheduler.js';
import { QueueService } from '../../src/infra/queue/queue.service.js';
import {
  INTERVALS,
  type IntervalJobKey,
  JOBS,
  SCHEDULES,
  scheduledJobs,
} from '../../src/infra/queue/queues.js';
import { TestEnv } from '../support/test-env.js';

/**
 * Every cron of the worker runs in UTC, whatever the host's time zone (issue 14 item 9): the one scheduler
 * registers each row of SCHEDULES with its UTC zone (without it a cron follows the host's zone, which on a
 * UTC test machine looks the same) and the next run lands on the row's UTC fields (issue 16 item 4).
 */
describe('cron schedules', () => {
  let env: TestEnv;
  let app: INestApplication;

  beforeAll(async () => {
    env = await TestEnv.create();
    const moduleRef = await Test.createTestingModule({
      imports: [WorkerModule.forRoot(env.config, { logStream: env.logs, schedule: true })],
    }).compile();
    app = moduleRef.createNestApplication({ bufferLogs: true });
    await app.init();
  });

  afterAll(async () => {
    await app.close();
    await env.close();
  });

  it('registers every row of SCHEDULES as a cron in UTC, and it fires at its UTC time', () => {
    const crons = app.get(SchedulerRegistry).getCronJobs();
    const expected = scheduledJobs();
    expect([...crons.keys()].sort()).toEqual(expected.map((job) => job.name).sort());
    for (const { name, schedule } of expected) {
      const job = crons.get(name)!;
      expect({ name, source: job.cronTime.source, timeZone: job.cronTime.timeZone }).toEqual({
        name,
        source: schedule,
        timeZone: 'UTC',
      });
      // Six fields: seconds minutes hours ...; the next run lands on those UTC fields.
      const [second, minute, hour] = schedule.split(' ');
      const next = job.nextDate().toUTC();
      expect({ name, second: next.second, minute: minute === '*' ? 'any' : next.minute }).toEqual({
        name,
        second: Number(second),
        minute: minute === '*' ? 'any' : Number(minute),
      });
      if (hour !== '*') expect({ name, hour: next.hour }).toEqual({ name, hour: Number(hour) });
    }
  });

  it('schedules the jobs the spec and DESIGN.md ask for, at their times, and the relays every 10 s', () => {
    // The contract, written out: removing or moving a row of SCHEDULES fails here.
    expect(
      Object.fromEntries(
        Object.entries(SCHEDULES).map(([key, row]) => [key, `${row.cron} ${row.timeZone} ${row.dedupe}`]),
      ),
    ).toEqual({
      reconcileCredits: '0 * * * * * UTC minute',
      expireSubscriptions: '0 5 * * * * UTC hour',
      billingBackfill: '15 * * * * * UTC minute',
      checkBillingDrift: '0 20 * * * * UTC hour',
      grantAllowances: '0 10 * * * * UTC hour',
      pruneWebhookArchive: '0 30 2 * * * UTC day',
      refreshBlocklist: '0 0 3 * * * UTC day',
      hardDeleteAccounts: '0 0 4 * * * UTC day',
      sweepBroadcasts: '30 * * * * * UTC minute',
    });
    const intervals = app.get(SchedulerRegistry).getIntervals();
    expect(intervals.sort()).toEqual(
      Object.keys(INTERVALS)
        .map((key) => JOBS[key as IntervalJobKey].name)
        .sort(),
    );
  });

  it('enqueues one job per tick period however many replicas fire', async () => {
    const scheduler = app.get(JobScheduler);
    const queues = app.get(QueueService);
    const at = new Date('2031-03-04T05:06:07Z');
    await Promise.all([
      scheduler.enqueue('expireSubscriptions', at),
      scheduler.enqueue('expireSubscriptions', new Date('2031-03-04T05:59:59Z')),
      scheduler.enqueueInterval('relayOutbox', new Date(at.getTime())),
      scheduler.enqueueInterval('relayOutbox', new Date(at.getTime() + 2_000)),
    ]);
    const expiry = await queues
      .queue(JOBS.expireSubscriptions.queue)
      .getJobs(['waiting', 'active', 'completed', 'delayed', 'failed']);
    expect(expiry.filter((job) => job?.id?.startsWith('expire-subscriptions-2031030405'))).toHaveLength(1);
    const relay = await queues
      .queue(JOBS.relayOutbox.queue)
      .getJobs(['waiting', 'active', 'completed', 'delayed', 'failed']);
    const period = Math.floor(at.getTime() / INTERVALS.relayOutbox.everyMs);
    expect(relay.filter((job) => job?.id === `relay-outbox-${period}`)).toHaveLength(1);
  });
});
