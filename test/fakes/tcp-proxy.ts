import { createServer, type Server, type Socket, connect } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy between the service and a real store (PostgreSQL, Redis) that a test can cut and restore,
 * to inject the outage of a dependency without touching the shared server.
 * - `cut('reset')`: existing connections are destroyed and new ones are reset at once (fast failure);
 * - `cut('blackhole')`: new connections are accepted and never answered (a hung network).
 */
export class TcpProxy {
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  private mode: 'open' | 'reset' | 'blackhole' = 'open';
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(target: string): Promise<TcpProxy> {
    const url = new URL(target);
    const proxy = new TcpProxy(
      url.hostname,
      Number(url.port || (url.protocol.startsWith('redis') ? 6379 : 5432)),
    );
    proxy.server = createServer((client) => proxy.accept(client));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.server.address() as AddressInfo).port;
    return proxy;
  }

  /** The target URL rewritten to go through the proxy. */
  rewrite(target: string): string {
    const url = new URL(target);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  cut(mode: 'reset' | 'blackhole' = 'reset'): void {
    this.mode = mode;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.mode = 'open';
  }

  private accept(client: Socket): void {
    if (this.mode === 'reset') {
      client.resetAndDestroy();
      return;
    }
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => undefined);
    if (this.mode === 'blackhole') return;
    const upstream = connect(this.targetPort, this.targetHost);
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async close(): Promise<void> {
    this.cut('reset');
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
