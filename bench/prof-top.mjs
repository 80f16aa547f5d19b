// Summarises a .cpuprofile (written by BENCH_CPU_PROF=<dir> npm run bench, or node --cpu-prof): self time
// by package, then the 40 hottest functions. Usage: node bench/prof-top.mjs <file.cpuprofile>
import { readFileSync } from 'node:fs';

const profile = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const sampled = new Map();
profile.samples.forEach((id, i) => sampled.set(id, (sampled.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const byPackage = new Map();
const byFunction = new Map();
let total = 0;
const add = (map, key, t) => map.set(key, (map.get(key) ?? 0) + t);
for (const node of profile.nodes) {
  const t = sampled.get(node.id) ?? 0;
  total += t;
  const { url, functionName, lineNumber } = node.callFrame;
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? (url.includes('/dist/') ? 'ours (dist/)' : url ? url.split(/[/:]/)[0] || url : '(native)');
  add(byPackage, pkg, t);
  add(byFunction, `${functionName || '(anonymous)'} ${url.replace(/.*node_modules\//, '')}:${lineNumber}`, t);
}
const top = (map, n) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([key, t]) => `${((t / total) * 100).toFixed(1).padStart(5)}%  ${key}`)
    .join('\n');
console.log(`sampled ${(total / 1e6).toFixed(1)} s\n\nself time by package:\n${top(byPackage, 20)}\n\nhottest functions:\n${top(byFunction, 40)}`);
