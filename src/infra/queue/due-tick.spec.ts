import { describe, expect, it } from '@jest/globals';
import { CronTime } from 'cron';
import { dueTick } from './due-tick.js';
import { JOBS, SCHEDULES, type ScheduledJobKey, tickJobId } from './queues.js';

const at = (iso: string) => new Date(iso);
const due = (key: ScheduledJobKey, now: string) => dueTick(SCHEDULES[key], at(now))?.toISOString();

describe('dueTick: the most recent tick a schedule fired at or before now', () => {
  it('daily 04:00 UTC: today once it is 04:00, yesterday before', () => {
    expect(due('hardDeleteAccounts', '2031-03-04T04:00:00.000Z')).toBe('2031-03-04T04:00:00.000Z');
    expect(due('hardDeleteAccounts', '2031-03-04T04:00:00.400Z')).toBe('2031-03-04T04:00:00.000Z');
    expect(due('hardDeleteAccounts', '2031-03-04T23:59:59.999Z')).toBe('2031-03-04T04:00:00.000Z');
    expect(due('hardDeleteAccounts', '2031-03-04T03:59:59.999Z')).toBe('2031-03-03T04:00:00.000Z');
    // Across a month end and the day after a leap day.
    expect(due('refreshBlocklist', '2032-03-01T02:00:00Z')).toBe('2032-02-29T03:00:00.000Z');
    expect(due('pruneWebhookArchive', '2031-01-01T00:00:00Z')).toBe('2030-12-31T02:30:00.000Z');
  });

  it('hourly at :05: this hour from :05 on, the previous hour before', () => {
    expect(due('expireSubscriptions', '2031-03-04T10:05:00Z')).toBe('2031-03-04T10:05:00.000Z');
    expect(due('expireSubscriptions', '2031-03-04T10:04:59Z')).toBe('2031-03-04T09:05:00.000Z');
    expect(due('expireSubscriptions', '2031-03-04T00:04:00Z')).toBe('2031-03-03T23:05:00.000Z');
    expect(due('checkBillingDrift', '2031-03-04T10:19:59Z')).toBe('2031-03-04T09:20:00.000Z');
  });

  it('per minute at :15 s', () => {
    expect(due('billingBackfill', '2031-03-04T10:00:14Z')).toBe('2031-03-04T09:59:15.000Z');
    expect(due('billingBackfill', '2031-03-04T10:00:15Z')).toBe('2031-03-04T10:00:15.000Z');
  });

  // A zone other than the host's (UTC on the test machines): an implementation that fell back to the
  // host's zone fails here.
  it("follows the schedule's time zone, daylight saving included", () => {
    const newYork = { cron: '0 0 4 * * *', timeZone: 'America/New_York' };
    expect(dueTick(newYork, at('2031-01-15T12:00:00Z'))?.toISOString()).toBe('2031-01-15T09:00:00.000Z');
    expect(dueTick(newYork, at('2031-07-15T12:00:00Z'))?.toISOString()).toBe('2031-07-15T08:00:00.000Z');
    expect(dueTick(newYork, at('2031-07-15T07:59:59Z'))?.toISOString()).toBe('2031-07-14T08:00:00.000Z');
  });

  it('finds ticks further back than a day (a weekly cron)', () => {
    // 2031-03-03 is a Monday; on Thursday the due tick is still Monday's.
    expect(dueTick({ cron: '0 0 4 * * 1', timeZone: 'UTC' }, at('2031-03-06T00:00:00Z'))?.toISOString()).toBe(
      '2031-03-03T04:00:00.000Z',
    );
  });

  it('is the fire time of the timer itself, and its job id is the one the timer stamped', () => {
    for (const key of Object.keys(SCHEDULES) as ScheduledJobKey[]) {
      const schedule = SCHEDULES[key];
      const fired = new CronTime(schedule.cron, schedule.timeZone)
        .getNextDateFrom(at('2031-03-04T01:02:03Z'), schedule.timeZone)
        .toJSDate();
      // The timer calls enqueue with new Date() a few milliseconds after its fire time.
      const late = new Date(fired.getTime() + 40);
      expect({ key, due: dueTick(schedule, late)?.toISOString() }).toEqual({ key, due: fired.toISOString() });
      expect(tickJobId(JOBS[key], dueTick(schedule, late)!, schedule.dedupe)).toBe(
        tickJobId(JOBS[key], late, schedule.dedupe),
      );
    }
  });
});
