import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Serves a disposable-domain list at `/list` with whatever status, type and body a test sets. */
export class FakeBlocklistServer {
  status = 200;
  contentType = 'text/plain; charset=utf-8';
  body = '';
  requests = 0;
  url = '';
  private server!: Server;

  static async start(): Promise<FakeBlocklistServer> {
    const fake = new FakeBlocklistServer();
    fake.server = createServer((req, res) => {
      fake.requests += 1;
      if (req.url !== '/list') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(fake.status, { 'content-type': fake.contentType });
      res.end(fake.body);
    });
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}/list`;
    return fake;
  }

  serve(body: string | unknown[], status = 200): void {
    this.status = status;
    this.contentType = Array.isArray(body) ? 'application/json' : 'text/plain; charset=utf-8';
    this.body = Array.isArray(body) ? JSON.stringify(body) : body;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
