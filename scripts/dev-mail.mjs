// A mail catcher for development that speaks the e-mail provider's API (Resend-shaped `POST /emails` and
// `POST /emails/batch`, answering `{id}` / `{data: [{id}]}`), so the service runs with
// EMAIL_PROVIDER=resend and EMAIL_API_URL pointing here, and nothing leaves the machine. The inbox:
//   http://localhost:8025/                the messages, newest first
//   http://localhost:8025/messages/<id>   one message as sent (HTML, or the text part)
//   http://localhost:8025/api/messages    the same as JSON
// `node scripts/dev-mail.mjs` (DEV_MAIL_PORT, default 8025; DEV_MAIL_HOST, default 127.0.0.1; the
// compose dev profile binds 0.0.0.0 inside its container). Keeps the last 500 messages in memory.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

const KEEP = 500;

const escape = (text) =>
  String(text ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );

function inboxPage(messages) {
  const rows = messages
    .map(
      (m) =>
        `<tr><td>${escape(m.received_at)}</td><td>${escape([].concat(m.to).join(', '))}</td>` +
        `<td><a href="/messages/${m.id}">${escape(m.subject)}</a></td><td>${escape(m.from)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html><meta charset="utf-8"><title>Development inbox</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem}td,th{padding:.3rem .8rem;text-align:left;border-bottom:1px solid #ddd}</style>
<h1>Development inbox (${messages.length})</h1>
<p>Messages the service sent to the e-mail provider stand-in; nothing was delivered.</p>
<table><tr><th>received</th><th>to</th><th>subject</th><th>from</th></tr>
${rows}
</table>`;
}

/** Starts the catcher; resolves { url, messages, close }. */
export async function startDevMail({ port = 8025, host = '127.0.0.1', log = () => {} } = {}) {
  const messages = [];
  const store = (email) => {
    const message = { id: randomUUID(), received_at: new Date().toISOString(), ...email };
    messages.unshift(message);
    messages.length = Math.min(messages.length, KEEP);
    log(`caught "${email.subject}" to ${[].concat(email.to).join(', ')}`);
    return { id: message.id };
  };
  const send = (res, status, body, type = 'application/json') =>
    res
      .writeHead(status, { 'content-type': type })
      .end(type === 'application/json' ? JSON.stringify(body) : body);

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/')
      return send(res, 200, inboxPage(messages), 'text/html; charset=utf-8');
    if (req.method === 'GET' && path === '/api/messages') return send(res, 200, { data: messages });
    if (req.method === 'GET' && path.startsWith('/messages/')) {
      const message = messages.find((m) => m.id === path.slice('/messages/'.length));
      if (!message) return send(res, 404, 'no such message\n', 'text/plain');
      return message.html
        ? send(res, 200, message.html, 'text/html; charset=utf-8')
        : send(res, 200, String(message.text ?? ''), 'text/plain; charset=utf-8');
    }
    if (req.method !== 'POST' || (path !== '/emails' && path !== '/emails/batch'))
      return send(res, 404, { name: 'not_found', message: `${req.method} ${path}` });
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(res, 422, { name: 'validation_error', message: 'the body is not JSON' });
      }
      if (path === '/emails/batch') {
        if (!Array.isArray(body))
          return send(res, 422, { name: 'validation_error', message: 'expected an array' });
        return send(res, 200, { data: body.map(store) });
      }
      return send(res, 200, store(body));
    });
    return undefined;
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    url: `http://${host}:${server.address().port}`,
    messages,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const port = Number(process.env.DEV_MAIL_PORT || 8025);
  const host = process.env.DEV_MAIL_HOST || '127.0.0.1';
  const mail = await startDevMail({ port, host, log: (line) => process.stdout.write(`[mail] ${line}\n`) });
  process.stdout.write(`[mail] development inbox on ${mail.url} (Resend-shaped API on the same address)\n`);
  for (const signal of ['SIGINT', 'SIGTERM'])
    process.on(signal, () => void mail.close().then(() => process.exit(0)));
}
