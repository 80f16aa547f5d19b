import 'reflect-metadata';
import { bootConfig } from './config/boot.js';

/**
 * Worker + scheduler process: BullMQ processors and @nestjs/schedule cron handlers (which only enqueue
 * jobs with deterministic ids, so several replicas never run a tick twice). Serves only its own /health
 * on WORKER_PORT.
 */
async function main(): Promise<void> {
  const config = await bootConfig();
  const tracing = await (await import('./infra/tracing/tracing.js')).startTracing(config, 'worker');
  const [{ NestFactory }, { Logger }, { WorkerModule }, { installGracefulShutdown }] = await Promise.all([
    import('@nestjs/core'),
    import('nestjs-pino'),
    import('./app/worker.module.js'),
    import('./app/shutdown.js'),
  ]);
  const app = await NestFactory.create<import('@nestjs/platform-express').NestExpressApplication>(
    WorkerModule.forRoot(config),
    { bufferLogs: true },
  );
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  installGracefulShutdown(app, 'worker', config.shutdownTimeoutMs, async () => tracing?.shutdown());
  await app.listen(config.workerPort);
}

void main();
