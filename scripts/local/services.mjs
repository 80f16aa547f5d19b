// Runs the API and the worker as child processes and renders their JSON log lines for a developer:
// pino-pretty shows every structured field (run ids, counts, provider, attempt, the error and its
// stack), with the request line (METHOD /path status ms) and the Nest context folded into the message.
// Not a terminal (a pipe, a file, CI): the JSON lines pass through unchanged, for tools.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { prettyFactory } from 'pino-pretty';
import { ROOT } from '../lib/env.mjs';
import { paint } from '../lib/output.mjs';

// Fields shown in the message line (or constant for a process), so not repeated below it.
const FOLDED = ['pid', 'hostname', 'service', 'env', 'context', 'req', 'res', 'responseTime'];

/** `[context] message METHOD /path status 12 ms` from one log record. */
export function messageLine(log, messageKey = 'msg') {
  const parts = [];
  if (log.context) parts.push(`[${log.context}]`);
  if (log[messageKey] !== undefined) parts.push(String(log[messageKey]));
  if (log.req?.method) parts.push(`${log.req.method} ${log.req.path ?? log.req.url ?? ''}`);
  const status = log.res?.status ?? log.res?.statusCode;
  if (status !== undefined) parts.push(String(status));
  if (typeof log.responseTime === 'number') parts.push(`${Math.round(log.responseTime)} ms`);
  if (log.req?.id) parts.push(`(request ${log.req.id})`);
  return parts.join(' ');
}

/** A function from one output line to its rendering: pino JSON pretty-printed, anything else unchanged. */
export function logRenderer({ color = false } = {}) {
  const pretty = prettyFactory({
    colorize: color,
    translateTime: 'SYS:HH:MM:ss',
    ignore: FOLDED.join(','),
    messageFormat: (log, messageKey) => messageLine(log, messageKey),
    singleLine: false,
  });
  return (line) => {
    if (!line.startsWith('{')) return line;
    try {
      JSON.parse(line);
    } catch {
      return line;
    }
    return pretty(line).replace(/\n$/, '');
  };
}

// Preloaded into the API and the worker. Should the launcher die without stopping them (SIGKILL), they
// are re-parented: they notice within a second and stop gracefully instead of holding on to their ports.
// Kept free of spaces, '%' and '#' so that the data: URL needs no escaping and `ps` stays readable.
const ORPHAN_WATCHDOG =
  "data:text/javascript,const p=process.ppid,t=setInterval(()=>{if(process.ppid!==p){clearInterval(t);process.kill(process.pid,'SIGTERM')}},1e3);t.unref()";

/**
 * Starts `node script` with its output prefixed by `[name]`. `ipc`: with an IPC channel (start:dev's
 * standby processes receive their entry point through it).
 */
export function startService(name, script, env, color, { ipc = false } = {}) {
  const child = spawn(process.execPath, ['--enable-source-maps', '--import', ORPHAN_WATCHDOG, script], {
    cwd: ROOT,
    env,
    // Own process group: only we signal it, exactly once (a second signal would cut Nest's graceful
    // shutdown short, and the terminal sends Ctrl-C to the whole foreground group).
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? ['ipc'] : [])],
  });
  const prefix = paint(color, `[${name}]`);
  const render = process.stdout.isTTY ? logRenderer({ color: !process.env.NO_COLOR }) : (line) => line;
  for (const [stream, out] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      out.write(`${render(line).replaceAll(/^/gm, `${prefix} `)}\n`);
    });
  }
  return child;
}
