import 'reflect-metadata';
import { bootConfig } from './config/boot.js';
import { loadDotEnv } from './config/dotenv.js';

/**
 * Worker + scheduler process: BullMQ processors and @nestjs/schedule cron handlers (which only enqueue
 * jobs with deterministic ids, so several replicas never run a tick twice). Serves only its own /health
 * on WORKER_PORT.
 */
async function main(): Promise<void> {
  // ./.env like npm start and the scripts (the process environment wins); none in the image.
  loadDotEnv();
  const config = await bootConfig();
  const tracing = await (await import('./infra/tracing/tracing.js')).startTracing(config, 'worker');
  const [
    { NestFactory },
    { AppLogger },
    { WorkerModule },
    { configureWorkerApp, installFallbackErrorHandler },
    { installGracefulShutdown },
  ] = await Promise.all([
    import('@nestjs/core'),
    import('./common/logging/app-logger.js'),
    import('./app/worker.module.js'),
    import('./app/configure-app.js'),
    import('./app/shutdown.js'),
  ]);
  // No route of the worker reads a body: none is parsed.
  const app = await NestFactory.create<import('@nestjs/platform-express').NestExpressApplication>(
    WorkerModule.forRoot(config),
    { bufferLogs: true, bodyParser: false },
  );
  app.useLogger(app.get(AppLogger));
  configureWorkerApp(app, config);
  await app.init();
  installFallbackErrorHandler(app);
  installGracefulShutdown(app, 'worker', config.shutdownTimeoutMs, async () => tracing?.shutdown());
  await app.listen(config.workerPort);
}

void main();
