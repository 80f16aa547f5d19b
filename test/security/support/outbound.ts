import net from 'node:net';

/** A local TCP listener that records every connection made to it (HTTP, TLS or anything else). */
export class Canary {
  readonly connections: string[] = [];
  private server!: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  static async start(): Promise<Canary> {
    const canary = new Canary();
    canary.server = net.createServer((socket) => {
      canary.sockets.add(socket);
      socket.on('close', () => canary.sockets.delete(socket));
      socket.once('data', (chunk) => {
        canary.connections.push(chunk.toString('latin1').slice(0, 200));
        socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
      });
      socket.on('error', () => undefined);
      canary.connections.push('(connected)');
    });
    await new Promise<void>((resolve) => canary.server.listen(0, '127.0.0.1', resolve));
    canary.port = (canary.server.address() as net.AddressInfo).port;
    return canary;
  }

  /** URL spellings an attacker would try for this listener. */
  urls(tag: string): string[] {
    const p = this.port;
    return [
      `http://127.0.0.1:${p}/${tag}`,
      `http://localhost:${p}/${tag}`,
      `https://127.0.0.1:${p}/${tag}`,
      `//127.0.0.1:${p}/${tag}`,
      `http://2130706433:${p}/${tag}`,
      `http://[::ffff:127.0.0.1]:${p}/${tag}`,
      `http://user:pass@127.0.0.1:${p}/${tag}`,
      `gopher://127.0.0.1:${p}/_${tag}`,
    ];
  }

  get host(): string {
    return `127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export interface OutboundTarget {
  host: string;
  port: number | null;
  path: string | null;
}

/**
 * Records every outbound TCP connection attempt of this process (fetch/undici, node:http, pg, ioredis,
 * TLS) by wrapping net.Socket.prototype.connect, which all of them end up calling.
 */
export function recordOutbound(): { targets: OutboundTarget[]; restore: () => void } {
  const targets: OutboundTarget[] = [];
  const original = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    // net.connect() passes its normalized arguments as one array.
    const normalized = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
    const [first, second] = normalized;
    if (first && typeof first === 'object') {
      const o = first as { host?: string; port?: number | string; path?: string };
      targets.push({
        host: o.host ?? 'localhost',
        port: o.port === undefined ? null : Number(o.port),
        path: o.path ?? null,
      });
    } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
      targets.push({
        host: typeof second === 'string' ? second : 'localhost',
        port: Number(first),
        path: null,
      });
    } else if (typeof first === 'string') {
      targets.push({ host: '', port: null, path: first });
    }
    return (original as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof original;
  return { targets, restore: () => void (net.Socket.prototype.connect = original) };
}

export interface HostileAnswer {
  status: number;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
}

/**
 * A provider gone bad: answers every request with whatever the test sets (off-contract JSON, HTML,
 * redirects, huge bodies) and records the requests it got.
 */
export class HostileServer {
  readonly requests: { method: string; path: string }[] = [];
  answer: HostileAnswer = { status: 200, body: {} };
  private server!: import('node:http').Server;
  url = '';

  static async start(): Promise<HostileServer> {
    const { createServer } = await import('node:http');
    const hostile = new HostileServer();
    hostile.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hostile.requests.push({ method: req.method ?? '', path: req.url ?? '' });
        const { status, headers = {}, body } = hostile.answer;
        const text = typeof body === 'string' ? body : JSON.stringify(body ?? null);
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(text);
      });
    });
    await new Promise<void>((resolve) => hostile.server.listen(0, '127.0.0.1', resolve));
    hostile.url = `http://127.0.0.1:${(hostile.server.address() as net.AddressInfo).port}`;
    return hostile;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
