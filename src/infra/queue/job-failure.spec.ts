import { describe, expect, it } from '@jest/globals';
import { outageRepushDelayMs } from './job-failure.js';

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
