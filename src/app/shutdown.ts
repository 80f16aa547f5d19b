import type { Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';

/** How often a draining server closes the keep-alive connections that have gone idle. */
const IDLE_SWEEP_MS = 100;

/**
 * Stops accepting connections and resolves once every request already received has been answered. A
 * request that arrives meanwhile on a kept-alive connection is still served, with `Connection: close`;
 * connections close as soon as they are idle.
 */
export async function drainHttpServer(server: Server): Promise<void> {
  if (!server.listening) return;
  server.prependListener('request', (_req, res: ServerResponse) => {
    res.shouldKeepAlive = false;
  });
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // A connection whose response was in flight at close() becomes idle only later.
  const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  try {
    await closed;
  } finally {
    clearInterval(sweep);
  }
}

/**
 * SIGTERM/SIGINT: first stop accepting connections and drain the in-flight requests, while the database
 * pool, Redis and the queues are all still open; only then app.close() runs every onModuleDestroy/
 * onApplicationShutdown hook (BullMQ workers finish their active jobs, then pools and connections close),
 * then exit 0. Nest's own close() runs the module hooks before it closes the HTTP server, so a request in
 * flight would lose its database half-way (a metered call answered 200 whose charge then failed).
 * A second signal, or a shutdown still running after `timeoutMs` (SHUTDOWN_TIMEOUT_MS), exits 1 at once.
 * Nest's own enableShutdownHooks would re-raise the signal after closing, which makes a clean stop look
 * like a crash to supervisors.
 */
export function installGracefulShutdown(
  app: INestApplication,
  name: string,
  timeoutMs: number,
  /** After the application closed: e.g. export the last trace spans. */
  afterClose?: () => Promise<void>,
): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    process.stderr.write(`${name}: ${signal} received, shutting down gracefully\n`);
    setTimeout(() => {
      process.stderr.write(`${name}: shutdown took longer than ${timeoutMs} ms, exiting\n`);
      process.exit(1);
    }, timeoutMs).unref();
    drainHttpServer(app.getHttpServer() as Server)
      .then(() => app.close())
      .then(() => afterClose?.())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          process.stderr.write(`${name}: shutdown failed: ${(err as Error).message}\n`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
