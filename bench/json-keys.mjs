// Issue 14 item 2: a 740 KB JSON body of 70,000 keys. Before the bound, class-transformer spent about 4 s
// of event-loop time on it (its O(n^2) key de-duplication), and JSON.parse alone 50-90 ms; now it is
// refused with 413 by one pass over the bytes that stops at the first excess, before JSON.parse. The figure is the synchronous (event-loop) work of that refusal,
// measured in this process on the compiled code, next to the old path; the HTTP latency is for context.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fmt, percentile, ROOT } from './lib.mjs';

const KEYS = 70_000;
const RUNS = 20;

export async function benchJsonKeys(ctx) {
  const { jsonSizeProblem } = await import(pathToFileURL(join(ROOT, 'dist', 'common', 'http', 'body-limits.js')).href);
  const { plainToInstance } = await import('class-transformer');
  const { CreateCompletionDto } = await import(pathToFileURL(join(ROOT, 'dist', 'modules', 'ai', 'dto', 'create-completion.dto.js')).href);
  const body = `{${Array.from({ length: KEYS }, (_, i) => `"k${i}":${i % 10}`).join(',')}}`;

  const bytes = Buffer.from(body);
  const refusal = [];
  for (let i = 0; i < RUNS; i += 1) {
    const started = performance.now();
    const problem = jsonSizeProblem(bytes, 10_000, 1000);
    refusal.push(performance.now() - started);
    if (!problem) throw new Error('the 70,000-key body was not refused');
  }
  refusal.sort((a, b) => a - b);

  const old = performance.now();
  plainToInstance(CreateCompletionDto, JSON.parse(body));
  const oldMs = performance.now() - old;

  const latencies = [];
  for (let i = 0; i < RUNS; i += 1) {
    const started = performance.now();
    const res = await fetch(`${ctx.apiUrl}/api/v1/ai/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    await res.arrayBuffer();
    latencies.push(performance.now() - started);
    if (res.status !== 413) throw new Error(`expected 413, got ${res.status}`);
  }
  latencies.sort((a, b) => a - b);
  const p99 = percentile(refusal, 99);
  return [
    {
      figure: `refuse a ${fmt(body.length / 1024, 0)} KB body of ${KEYS} keys (event-loop time)`,
      value: `p50 ${fmt(percentile(refusal, 50))} ms, max ${fmt(p99)} ms; HTTP 413 p50 ${fmt(percentile(latencies, 50))} ms`,
      baseline: `class-transformer on it: ${fmt(oldMs, 0)} ms`,
      ratio: NaN,
      goal: '< 50 ms',
      met: p99 < 50,
    },
  ];
}
