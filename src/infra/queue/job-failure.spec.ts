import { describe, expect, it } from '@jest/globals';
import type { Job } from 'bullmq';
import { nextOutagePush, outageRepushDelayMs } from './job-failure.js';

describe('outageRepushDelayMs (the relay backoff of a job that failed on an outage)', () => {
  it('pushes again at once after the first push, then waits 10 s doubling up to 10 minutes', () => {
    const waits = Array.from({ length: 10 }, (_, i) => outageRepushDelayMs(i));
    expect(waits).toEqual([0, 0, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 600_000, 600_000]);
  });

  it('stays at the cap for any number of pushes, and makes the 24 h window about 150 runs', () => {
    expect(outageRepushDelayMs(10_000)).toBe(600_000);
    let elapsed = 0;
    let pushes = 1;
    while (elapsed <= 24 * 3600 * 1000) elapsed += outageRepushDelayMs(pushes++);
    expect(pushes).toBeGreaterThan(140);
    expect(pushes).toBeLessThan(160);
  });
});

describe('nextOutagePush (the same backoff where no outbox entry counts the pushes)', () => {
  const failed = (data: object, pushedAt: number) => ({ data, timestamp: pushedAt }) as unknown as Job;
  const t0 = Date.UTC(2031, 0, 1);

  it('pushes again at once after the first push, counting the pushes in the job data', () => {
    expect(nextOutagePush(failed({ runId: 'r1' }, t0), t0)).toEqual({ runId: 'r1', outagePushes: 2 });
  });

  it('waits outageRepushDelayMs from the last push before the next one', () => {
    const second = failed({ runId: 'r1', outagePushes: 2 }, t0);
    expect(nextOutagePush(second, t0 + 9_999)).toBeNull();
    expect(nextOutagePush(second, t0 + 10_000)).toEqual({ runId: 'r1', outagePushes: 3 });
    const late = failed({ outagePushes: 40 }, t0);
    expect(nextOutagePush(late, t0 + 599_999)).toBeNull();
    expect(nextOutagePush(late, t0 + 600_000)).toEqual({ outagePushes: 41 });
  });
});
