import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { WorkerModule } from '../../src/app/worker.module.js';
import { scheduledJobs } from '../../src/infra/queue/queues.js';
import { TestEnv } from '../support/test-env.js';

/**
 * Every cron of the worker runs in UTC, whatever the host's time zone (issue 14 item 9): the jobs the
 * worker module really registers carry the UTC zone (without it they follow the host's zone, which on a UTC
 * test machine looks the same) and their next run lands on the schedule's UTC fields.
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

  it('registers every scheduled job in UTC and fires it at its UTC time', () => {
    const crons = app.get(SchedulerRegistry).getCronJobs();
    const expected = scheduledJobs();
    const declared = new Map<string, string | undefined>();
    for (const module of app.get(ModulesContainer).values()) {
      for (const wrapper of module.providers.values()) {
        const proto = wrapper.instance ? Object.getPrototypeOf(wrapper.instance) : null;
        if (!proto) continue;
        for (const key of Object.getOwnPropertyNames(proto)) {
          const method = Object.getOwnPropertyDescriptor(proto, key)?.value;
          if (typeof method !== 'function') continue;
          // @nestjs/schedule's SCHEDULE_CRON_OPTIONS: the options given to @Cron().
          const options = Reflect.getMetadata('SCHEDULE_CRON_OPTIONS', method) as
            { name?: string; timeZone?: string } | undefined;
          if (options) declared.set(options.name ?? `${proto.constructor.name}.${key}`, options.timeZone);
        }
      }
    }
    expect([...declared.keys()].sort()).toEqual(expected.map((job) => job.name).sort());
    expect([...crons.keys()].sort()).toEqual(expected.map((job) => job.name).sort());
    for (const { name, schedule } of expected) {
      const job = crons.get(name)!;
      // What the job was registered with: the CronJob's own zone defaults to the host's, so it reads 'UTC'
      // on a UTC machine either way.
      expect({ name, timeZone: declared.get(name) }).toEqual({ name, timeZone: 'UTC' });
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
});
