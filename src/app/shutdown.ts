import type { INestApplication } from '@nestjs/common';

/**
 * SIGTERM/SIGINT: stop accepting connections, let in-flight requests and active jobs finish (app.close()
 * runs every onModuleDestroy/onApplicationShutdown hook: HTTP server, BullMQ workers, pools), then exit 0.
 * A second signal, or a shutdown still running after `timeoutMs` (SHUTDOWN_TIMEOUT_MS), exits 1 at once.
 * Nest's own enableShutdownHooks would re-raise the signal after closing, which makes a clean stop look
 * like a crash to supervisors.
 */
export function installGracefulShutdown(app: INestApplication, name: string, timeoutMs: number): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    process.stderr.write(`${name}: ${signal} received, shutting down gracefully\n`);
    setTimeout(() => {
      process.stderr.write(`${name}: shutdown took longer than ${timeoutMs} ms, exiting\n`);
      process.exit(1);
    }, timeoutMs).unref();
    app.close().then(
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
