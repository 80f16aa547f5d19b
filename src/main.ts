import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiModule } from './app/api.module.js';
import { bootConfig } from './config/boot.js';
import { configureApiApp, installFallbackErrorHandler } from './app/configure-app.js';

async function main(): Promise<void> {
  const config = await bootConfig();
  const app = await NestFactory.create<NestExpressApplication>(ApiModule.forRoot(config), {
    bufferLogs: true,
    rawBody: true,
    bodyParser: false,
  });
  await configureApiApp(app, config);
  // SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close pools (onModuleDestroy hooks).
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.init();
  installFallbackErrorHandler(app);
  await app.listen(config.port);
}

void main();
