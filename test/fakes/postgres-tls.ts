import { readFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';

const TLS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'tls');
/** Self-signed certificate for 127.0.0.1 (test only; the key protects nothing). */
export const POSTGRES_TEST_CA = join(TLS_DIR, 'postgres-test.crt');

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/**
 * PostgreSQL with TLS in front of the shared test server, which has `ssl = off`: a deployed boot needs
 * `sslmode=require` or stricter (issue 14 item 3). Speaks the protocol's SSLRequest handshake ('S', then
 * TLS), then pipes the decrypted stream to the real server. A client that does not ask for TLS is cut off,
 * as a server with `hostssl` only would.
 */
export class PostgresTlsProxy {
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(target: string): Promise<PostgresTlsProxy> {
    const url = new URL(target);
    const proxy = new PostgresTlsProxy(url.hostname, Number(url.port || 5432));
    // noDelay on both legs, as PostgreSQL and node-postgres set on theirs: with Nagle's algorithm a relayed small
    // write waits behind the previous one for the peer's delayed ACK (up to 40 ms on Linux).
    proxy.server = createServer({ noDelay: true }, (client) => proxy.accept(client));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.server.address() as AddressInfo).port;
    return proxy;
  }

  /** The target URL through the proxy with full certificate verification. */
  url(target: string): string {
    const url = new URL(target);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    url.searchParams.set('sslmode', 'verify-full');
    url.searchParams.set('sslrootcert', POSTGRES_TEST_CA);
    return url.toString();
  }

  private accept(client: Socket): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => client.destroy());
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 8) return;
      const code = buffered.readInt32BE(4);
      if (buffered.readInt32BE(0) === 8 && code === GSSENC_REQUEST) {
        buffered = buffered.subarray(8);
        client.write('N');
        return;
      }
      client.off('data', onData);
      if (buffered.readInt32BE(0) !== 8 || code !== SSL_REQUEST) {
        client.destroy();
        return;
      }
      client.write('S');
      this.upgrade(client);
    };
    client.on('data', onData);
  }

  private upgrade(client: Socket): void {
    const tls = new TLSSocket(client, {
      isServer: true,
      key: readFileSync(join(TLS_DIR, 'postgres-test.key')),
      cert: readFileSync(POSTGRES_TEST_CA),
    });
    const upstream = connect({ port: this.targetPort, host: this.targetHost, noDelay: true });
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      tls.destroy();
    });
    tls.on('close', () => upstream.destroy());
    tls.on('error', () => upstream.destroy());
    upstream.on('error', () => tls.destroy());
    tls.pipe(upstream);
    upstream.pipe(tls);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
