// `npm start`'s Redis: REDIS_URL when something answers there, else `redis-server` from PATH.
import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { dataDir, setting } from '../lib/env.mjs';
import { paint, redactUrl, say } from '../lib/output.mjs';
import {
  exited,
  isStopping,
  spawned,
  started,
  stopLeftover,
  stopProcess,
  supervise,
} from '../lib/processes.mjs';

const redisPidFile = () => join(dataDir(), 'redis-server.pid');

/** PING through the URL; null when Redis answers, else the error message. */
export async function tryRedis(url) {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1500,
    commandTimeout: 1500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (error) {
    return error.message || String(error);
  } finally {
    redis.disconnect();
  }
}

export async function resolveRedis() {
  const url = setting('REDIS_URL', 'redis://127.0.0.1:6379');
  await stopLeftover(redisPidFile(), 'redis-server', 'redis-server', 'SIGTERM');
  const problem = await tryRedis(url);
  if (!problem) {
    say(`redis: ${redactUrl(url)}`);
    return url;
  }
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`REDIS_URL is not a URL: ${redactUrl(url)}`);
  }
  const local = ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
  if (parsed.protocol !== 'redis:' || !local)
    throw new Error(`Redis at ${redactUrl(url)} does not answer: ${problem}`);
  await startRedisServer(url, parsed);
  return url;
}

async function startRedisServer(url, parsed) {
  const port = Number(parsed.port || 6379);
  // Nothing is written to disk: a development broker starts empty.
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  args.push('--loglevel', 'warning');
  if (parsed.password) args.push('--requirepass', decodeURIComponent(parsed.password));
  say(`nothing answers on ${redactUrl(url)}; starting redis-server on port ${port}`);
  const child = spawn('redis-server', args, {
    cwd: dataDir(),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await spawned(child);
  } catch (error) {
    if (error.code !== 'ENOENT') throw new Error(`redis-server: ${error.message}`, { cause: error });
    throw new Error(
      'Redis is required and redis-server is not installed. Install it (Debian/Ubuntu: ' +
        '`sudo apt-get install redis-server`, macOS: `brew install redis`) or set REDIS_URL.',
      { cause: error },
    );
  }
  // Its start-up banner and warnings (memory overcommit, ...) are noise here: kept for failures only.
  const output = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      output.push(line);
      if (output.length > 30) output.shift();
    });
  }
  child.once('exit', () => {
    if (!isStopping())
      process.stderr.write(output.map((line) => `${paint('33', '[redis]')} ${line}\n`).join(''));
  });
  await writeFile(redisPidFile(), `${child.pid}\n`);
  started.push({
    name: 'redis-server',
    stop: async () => {
      await stopProcess(child, 'redis-server');
      await rm(redisPidFile(), { force: true });
    },
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (exited(child)) throw new Error(`redis-server exited during startup (code ${child.exitCode})`);
    const problem = await tryRedis(url);
    if (!problem) break;
    if (Date.now() > deadline) throw new Error(`redis-server did not answer in 10 s: ${problem}`);
    await sleep(100);
  }
  supervise(child, 'redis-server', 'SIGTERM');
}
