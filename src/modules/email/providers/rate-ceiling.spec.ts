import { describe, expect, it } from '@jest/globals';
import { providerPauseMs } from './rate-ceiling.js';

describe('providerPauseMs', () => {
  it('reads Retry-After on a 429 (seconds or HTTP date)', () => {
    expect(providerPauseMs(429, new Headers({ 'retry-after': '2' }))).toBe(2000);
    const at = new Date(Date.now() + 3000).toUTCString();
    expect(providerPauseMs(429, new Headers({ 'retry-after': at }))).toBeGreaterThan(1000);
    expect(providerPauseMs(429, new Headers())).toBe(1000);
  });

  it('pauses until ratelimit-reset when the window is exhausted, even on a success', () => {
    expect(providerPauseMs(200, new Headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '1' }))).toBe(
      1000,
    );
    expect(
      providerPauseMs(200, new Headers({ 'ratelimit-remaining': '3', 'ratelimit-reset': '1' })),
    ).toBeNull();
    expect(providerPauseMs(200, new Headers())).toBeNull();
    expect(providerPauseMs(503, new Headers({ 'retry-after': '5' }))).toBeNull();
  });
});
