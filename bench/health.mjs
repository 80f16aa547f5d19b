// GET /health against a bare Express 5 app answering the same JSON, side by side in one run.
import { join } from 'node:path';
import { freePort, load, ratio, ROOT, startProcess } from './lib.mjs';

export async function benchHealth(ctx) {
  const basePort = await freePort();
  const baseline = await startProcess(join(ROOT, 'bench', 'baselines', 'express-health.mjs'), { PORT: String(basePort) }, {
    readyUrl: `http://127.0.0.1:${basePort}/health`,
  });
  const rows = [];
  try {
    for (const connections of [1, 50]) {
      const ours = await load({ url: `${ctx.apiUrl}/health`, connections, duration: ctx.duration });
      const base = await load({ url: `http://127.0.0.1:${basePort}/health`, connections, duration: ctx.duration });
      rows.push({
        figure: `GET /health, ${connections} conn`,
        value: `${Math.round(ours.rps)} req/s, p50 ${ours.p50} ms, p99 ${ours.p99} ms`,
        baseline: `express ${Math.round(base.rps)} req/s, p50 ${base.p50} ms, p99 ${base.p99} ms`,
        ratio: ratio(ours.rps, base.rps),
        goal: connections === 1 ? '>= 0.75x, p50 < 1 ms' : '>= 0.75x',
        met: ratio(ours.rps, base.rps) >= 0.75 && (connections > 1 || ours.p50 < 1) && ours.errors === 0,
      });
    }
  } finally {
    await baseline.stop();
  }
  return rows;
}
