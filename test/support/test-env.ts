import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { INestApplication, Type } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import { Logger } from 'nestjs-pino';
import request from 'supertest';
import { ApiModule } from '../../src/app/api.module.js';
import {
  configureApiApp,
  configureWorkerApp,
  installFallbackErrorHandler,
} from '../../src/app/configure-app.js';
import { WorkerModule } from '../../src/app/worker.module.js';
import type { AppConfig } from '../../src/config/app-config.js';
import { loadConfig } from '../../src/config/env.js';
import { PrismaService } from '../../src/infra/prisma/prisma.service.js';
import { FakeIdentityProvider } from '../fakes/identity-provider.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export const TEST_SECRETS = {
  IDENTITY_WEBHOOK_SECRET: `whsec_${Buffer.from('identity-webhook-secret-for-tests-0123456789').toString('base64')}`,
  BILLING_WEBHOOK_SECRET: 'billing-webhook-secret-for-tests-0123456789',
  EMAIL_UNSUBSCRIBE_SECRET: 'unsubscribe-secret-for-tests-0123456789abcdef',
  // 24 bytes, as Svix (Resend's sender) generates them.
  EMAIL_WEBHOOK_SECRET: `whsec_${Buffer.from('email-webhook-secret-24b').toString('base64')}`,
};

/** Collects the JSON log lines the service wrote (tests scan them for secrets). */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    callback();
  }
}

export interface TestEnvOptions {
  /** Extra environment variables (APP_ENV is `test` unless given). */
  env?: Record<string, string>;
  /** Capture logs at this level (default: silent). */
  logLevel?: string;
}

export interface ApiAppOptions {
  /** Replace providers (e.g. a clock) before the app compiles. */
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /** Test-only modules mounted next to the application (e.g. ProbeModule). */
  modules?: Type[];
}

/**
 * One test file's world: its own migrated database, its own Redis key prefix, a local identity
 * provider. Start the API, the worker, or both against it; close() tears everything down in order.
 */
export class TestEnv {
  readonly logs = new LogCapture();
  private readonly apps: INestApplication[] = [];
  private readonly closers: (() => Promise<void>)[] = [];

  private constructor(
    readonly db: TestDatabase,
    readonly idp: FakeIdentityProvider,
    readonly env: Record<string, string>,
    readonly config: AppConfig,
  ) {}

  static async create(options: TestEnvOptions = {}): Promise<TestEnv> {
    const [db, idp] = await Promise.all([createTestDatabase(), FakeIdentityProvider.start()]);
    const env: Record<string, string> = {
      APP_ENV: 'test',
      DATABASE_URL: db.url,
      DATABASE_POOL_SIZE: '10',
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `t${process.env.TEST_RUN_ID}${randomBytes(3).toString('hex')}`,
      IDENTITY_JWKS_URL: idp.jwksUrl,
      IDENTITY_ISSUER: idp.issuer,
      ADMIN_EMAILS: 'admin@example.com',
      PUBLIC_BASE_URL: 'https://app.example.test',
      LOG_LEVEL: options.logLevel ?? 'info',
      // A webhook whose handler keeps failing settles (FAILED) within a second, not 17 minutes.
      WEBHOOK_PROCESS_ATTEMPTS: '3',
      WEBHOOK_RETRY_BASE_MS: '50',
      // Suites send hundreds of requests from one address and user: the general limits stay on (their
      // code path runs everywhere) but out of reach. test/security/api4 proves them with small values.
      RATE_LIMIT_WRITES_PER_MINUTE: '1000000',
      RATE_LIMIT_WRITES_BURST: '1000000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000',
      ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR: '1000000',
      BILLING_CREDIT_PACKS: 'pri_pack_s:500,pri_pack_l:3000',
      ...TEST_SECRETS,
      ...options.env,
    };
    return new TestEnv(db, idp, env, loadConfig(env));
  }

  /** Another configuration over the same database and Redis prefix. */
  configWith(overrides: Record<string, string>): AppConfig {
    return loadConfig({ ...this.env, ...overrides });
  }

  async startApi(options: ApiAppOptions & { config?: AppConfig } = {}): Promise<ApiApp> {
    const config = options.config ?? this.config;
    let builder = Test.createTestingModule({
      imports: [ApiModule.forRoot(config, { logStream: this.logs }), ...(options.modules ?? [])],
    });
    if (options.override) builder = options.override(builder);
    const moduleRef = await builder.compile();
    const app = moduleRef.createNestApplication<NestExpressApplication>({
      rawBody: true,
      bodyParser: false,
      bufferLogs: true,
    });
    await configureApiApp(app, config);
    await app.init();
    installFallbackErrorHandler(app);
    this.apps.push(app);
    return new ApiApp(app, this, config);
  }

  /** The worker module with its BullMQ processors running against the real Redis; cron disabled. */
  async startWorker(options: ApiAppOptions & { config?: AppConfig } = {}): Promise<INestApplication> {
    const config = options.config ?? this.config;
    let builder = Test.createTestingModule({
      imports: [WorkerModule.forRoot(config, { logStream: this.logs, schedule: false })],
    });
    if (options.override) builder = options.override(builder);
    // As worker.ts creates and configures it (no body parser, problem+json answers).
    const app = (await builder.compile()).createNestApplication<NestExpressApplication>({
      bufferLogs: true,
      bodyParser: false,
    });
    app.useLogger(app.get(Logger));
    configureWorkerApp(app, config);
    await app.init();
    installFallbackErrorHandler(app);
    this.apps.push(app);
    return app;
  }

  /** Closes one app now (a worker "restart" mid-job); close() will not close it a second time. */
  async stop(app: INestApplication): Promise<void> {
    const index = this.apps.indexOf(app);
    if (index >= 0) this.apps.splice(index, 1);
    await app.close();
  }

  onClose(fn: () => Promise<void>): void {
    this.closers.push(fn);
  }

  async close(): Promise<void> {
    for (const app of this.apps.reverse()) await app.close();
    for (const fn of this.closers.reverse()) await fn();
    await this.idp.close();
    await this.db.drop();
  }
}

export class ApiApp {
  readonly prisma: PrismaService;

  constructor(
    readonly app: NestExpressApplication,
    readonly env: TestEnv,
    readonly config: AppConfig,
  ) {
    this.prisma = app.get(PrismaService);
  }

  get http() {
    return request(this.app.getHttpServer());
  }

  /** A real RS256 token from the test identity provider. */
  token(sub: string, email?: string): Promise<string> {
    return this.env.idp.token({ sub, email: email ?? `${sub}@example.com` });
  }

  /** Authorization header value for a (just-in-time created) user. */
  async bearer(sub: string, email?: string): Promise<string> {
    return `Bearer ${await this.token(sub, email)}`;
  }
}
