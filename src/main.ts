import 'reflect-metadata';
import { bootConfig } from './config/boot.js';
import { loadDotEnv } from './config/dotenv.js';

async function main(): Promise<void> {
  // Configuration and boot refusals first, before the application graph is even loaded.
  // ./.env like npm start and the scripts (the process environment wins); none in the image.
  loadDotEnv();
  const config = await bootConfig();
  // Before the application graph loads, so its first request is traced (no-op without the endpoint).
  const tracing = await (await import('./infra/tracing/tracing.js')).startTracing(config, 'api');
  const [
    { NestFactory },
    { ApiModule },
    { configureApiApp, installFallbackErrorHandler },
    { installGracefulShutdown },
  ] = await Promise.all([
    import('@nestjs/core'),
    import('./app/api.module.js'),
    import('./app/configure-app.js'),
    import('./app/shutdown.js'),
  ]);
  const app = await NestFactory.create<import('@nestjs/platform-express').NestExpressApplication>(
    ApiModule.forRoot(config),
    { bufferLogs: true, rawBody: true, bodyParser: false },
  );
  await configureApiApp(app, config);
  await app.init();
  installFallbackErrorHandler(app);
  installGracefulShutdown(app, 'api', config.shutdownTimeoutMs, async () => tracing?.shutdown());
  await app.listen(config.port);
}

void main();
