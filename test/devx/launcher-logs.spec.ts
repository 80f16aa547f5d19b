import { describe, expect, it } from '@jest/globals';
// @ts-expect-error plain ESM script without type declarations
import { logRenderer } from '../../scripts/local/services.mjs';

const render = (logRenderer as (options: { color: boolean }) => (line: string) => string)({ color: false });

/** Issue 20 item 5: `npm start` renders the JSON lines with pino-pretty and keeps every structured field. */
describe("the launcher's log rendering (scripts/local/services.mjs)", () => {
  it('shows the structured fields a hand-written renderer dropped: run ids, counts, provider, attempt', () => {
    const line = JSON.stringify({
      level: 30,
      time: Date.parse('2026-11-25T10:00:00Z'),
      pid: 1,
      hostname: 'h',
      service: 'subscription-service',
      env: 'development',
      context: 'BroadcastSweeper',
      runId: 'run_42',
      count: 17,
      provider: 'email',
      attempt: 2,
      msg: 'sweep finished',
    });
    const text = render(line);
    expect(text).toMatch(/INFO.*\[BroadcastSweeper\] sweep finished/);
    for (const field of ['runId: "run_42"', 'count: 17', 'provider: "email"', 'attempt: 2'])
      expect(text).toContain(field);
    // Constant per process: not repeated on every line.
    expect(text).not.toContain('hostname');
    expect(text).not.toContain('subscription-service');
  });

  it('prints the request line and the error with its stack', () => {
    const request = render(
      JSON.stringify({
        level: 30,
        time: 0,
        msg: 'request completed',
        req: { id: 'r1', method: 'GET', path: '/api/v1/me' },
        res: { status: 200 },
        responseTime: 3.4,
      }),
    );
    expect(request).toContain('request completed GET /api/v1/me 200 3 ms (request r1)');
    const failure = render(
      JSON.stringify({
        level: 50,
        time: 0,
        context: 'Exceptions',
        msg: 'request failed',
        err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at handler (src/x.ts:1:1)' },
      }),
    );
    expect(failure).toMatch(/ERROR.*\[Exceptions\] request failed/);
    expect(failure).toContain('at handler (src/x.ts:1:1)');
  });

  it('passes anything that is not a JSON log line through unchanged', () => {
    expect(render('plain text from a child')).toBe('plain text from a child');
    expect(render('{ not json')).toBe('{ not json');
  });
});
