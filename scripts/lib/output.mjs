// The launcher's own lines (`[start] ...`), colours only on a terminal.
const useColor = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;

export const paint = (code, text) => (useColor ? `\x1b[${code}m${text}\x1b[0m` : text);

export function say(message) {
  process.stdout.write(`${paint('2', '[start]')} ${message}\n`);
}

export const redactUrl = (url) => url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
