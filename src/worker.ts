import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { WorkerModule } from './app/worker.module.js';
import { bootConfig } from './config/boot.js';

/**
 * Worker + scheduler process: BullMQ processors and @nestjs/schedule cron handlers (which only enqueue
 * jobs with deterministic ids, so several replicas never run a tick twice). Serves only its own /health
 * on WORKER_PORT.
 */
async function main(): Promise<void> {
  const config = await bootConfig();
  const app = await NestFactory.create<NestExpressApplication>(WorkerModule.forRoot(config), {
    bufferLogs: true,
  });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  // SIGTERM: BullMQ workers finish their active jobs before the pools close.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.listen(config.workerPort);
}

void main();
