import { CronTime } from 'cron';

const MINUTE = 60_000;

/**
 * How far back dueTick looks, widest last: the first window holding a fire time ends the search, so a
 * per-minute cron costs one step and a daily one a handful.
 */
const LOOKBACK_MS = [MINUTE, 60 * MINUTE, 24 * 60 * MINUTE, 7 * 24 * 60 * MINUTE, 366 * 24 * 60 * MINUTE];

/**
 * The most recent time at or before `now` when a cron expression fires in its time zone: the tick that is
 * due at `now`. `cron` (the library the scheduler registers its jobs with) only computes next fire times,
 * so this walks forward with its `getNextDateFrom` from a window before `now`: the same parser, time-zone
 * and DST rules as the timers themselves. Null when the expression fires less than once a year.
 */
export function dueTick(schedule: { cron: string; timeZone: string }, now: Date): Date | null {
  const time = new CronTime(schedule.cron, schedule.timeZone);
  for (const lookback of LOOKBACK_MS) {
    let due: Date | null = null;
    // getNextDateFrom answers strictly after its start, in whole seconds.
    let next = time.getNextDateFrom(new Date(now.getTime() - lookback), schedule.timeZone).toJSDate();
    while (next.getTime() <= now.getTime()) {
      due = next;
      next = time.getNextDateFrom(next, schedule.timeZone).toJSDate();
    }
    if (due) return due;
  }
  return null;
}
