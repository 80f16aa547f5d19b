import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A Chroma-shaped vector store that only answers the heartbeat; tests set its mood. */
export class FakeVectorStore {
  private server!: Server;
  url = '';
  status = 200;
  delayMs = 0;
  requests = 0;
  /** Replies still waiting for `delayMs`: close() cancels them, so no timer outlives the test. */
  private readonly pending = new Set<NodeJS.Timeout>();

  static async start(): Promise<FakeVectorStore> {
    const store = new FakeVectorStore();
    store.server = createServer((req, res) => {
      store.requests += 1;
      const reply = setTimeout(() => {
        store.pending.delete(reply);
        if (req.url !== '/api/v2/heartbeat') {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(store.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ 'nanosecond heartbeat': Date.now() * 1e6 }));
      }, store.delayMs);
      store.pending.add(reply);
    });
    await new Promise<void>((resolve) => store.server.listen(0, '127.0.0.1', resolve));
    store.url = `http://127.0.0.1:${(store.server.address() as AddressInfo).port}`;
    return store;
  }

  async close(): Promise<void> {
    for (const reply of this.pending) clearTimeout(reply);
    this.pending.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
