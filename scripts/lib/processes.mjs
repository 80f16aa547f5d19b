// The launcher's process book-keeping: what it started (stopped in reverse order), supervision of the
// processes that must keep running, ports, and the helpers to wait for a server.
import { readFileSync } from 'node:fs';
import { createServer as createTcpServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { say } from './output.mjs';

// Everything started so far, stopped in reverse order: the API and the worker first, the stores last.
export const started = [];
// Processes to signal if the launcher itself dies without running its shutdown.
export const lastResort = new Set();
let stopping = null;
/** True once shutdown began: long steps check it and return early. */
export const isStopping = () => stopping !== null;

export function shutdown(exitCode, reason) {
  stopping ??= (async () => {
    if (reason) say(reason);
    for (const { name, stop } of started.reverse()) {
      say(`stopping ${name}`);
      try {
        await stop();
      } catch (error) {
        say(`stopping ${name} failed: ${error.message}`);
      }
    }
    process.exit(exitCode);
  })();
  return stopping;
}

export function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Signals a process and waits for it to exit; SIGKILL after the grace period. */
export function stopProcess(child, name, signal = 'SIGTERM', graceMs = 15_000) {
  if (exited(child)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      say(`${name} did not stop within ${graceMs / 1000} s; killing it`);
      child.kill('SIGKILL');
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** A process that must keep running: if it exits on its own, everything stops with a failure. */
export function supervise(child, name, stopSignal) {
  const entry = { child, signal: stopSignal };
  lastResort.add(entry);
  child.once('exit', (code, signal) => {
    lastResort.delete(entry);
    if (!stopping)
      void shutdown(1, `${name} exited unexpectedly (${signal ?? `code ${code}`}); stopping everything`);
  });
}

/** Resolves the child's `spawn` or `error` event, so a missing binary becomes a rejected promise. */
export function spawned(child) {
  return new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
}

export function portFree(port, host) {
  return new Promise((resolve) => {
    const server = createTcpServer();
    // Only EADDRINUSE means taken; anything else (say, no IPv6) is left for the service to report.
    server.once('error', (error) => resolve(error.code !== 'EADDRINUSE'));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createTcpServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Stops a server that a launcher killed with SIGKILL could not stop, found through its pid file. Only
 * when its command line carries `marker`: the pid may since belong to an unrelated process. Without
 * /proc (macOS) we cannot tell, and leave it alone.
 */
export async function stopLeftover(pidFile, name, marker, signal) {
  let pid;
  let cmdline;
  try {
    pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    process.kill(pid, 0);
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return; // no pid file, no such process, or no way to check it
  }
  if (!cmdline.includes(marker)) return;
  say(`stopping ${name} left running by an earlier launcher (pid ${pid})`);
  process.kill(pid, signal);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await sleep(100);
  }
  throw new Error(`${name} from an earlier run (pid ${pid}) does not stop; stop it and retry`);
}

export async function waitForHttp(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !exited(child) && !stopping) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.ok) return true;
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  return false;
}
