import { RequestMethod } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import type { AppConfig } from '../config/app-config.js';
import { sendProblem, toProblem } from '../common/filters/problem-details.filter.js';
import { requestIdMiddleware } from '../common/http/request-id.middleware.js';

export const API_PREFIX = 'api/v1';
export const JSON_BODY_LIMIT = '1mb';

/** Paths outside /api/v1: the operational trio and the webhook receivers. */
const UNPREFIXED = [
  { path: 'health', method: RequestMethod.GET },
  { path: 'health/ready', method: RequestMethod.GET },
  { path: 'status', method: RequestMethod.GET },
  { path: 'webhooks/identity', method: RequestMethod.POST },
  { path: 'webhooks/billing', method: RequestMethod.POST },
];

const PERMISSIONS_POLICY =
  'accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), payment=(), usb=(), interest-cohort=()';

/**
 * Everything about the HTTP surface that is not a route: request ids, security headers, CORS, body
 * limits, the /api/v1 prefix and the docs. Shared by main.ts and the e2e tests so both see the same app.
 */
export async function configureApiApp(app: NestExpressApplication, config: AppConfig): Promise<void> {
  app.useLogger(app.get(Logger));
  app.flushLogs();
  app.disable('x-powered-by');
  app.use(requestIdMiddleware);
  app.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          'default-src': ["'self'"],
          'script-src': ["'self'"],
          'style-src': ["'self'", "'unsafe-inline'"],
          'img-src': ["'self'", 'data:'],
          'object-src': ["'none'"],
          'base-uri': ["'none'"],
          'form-action': ["'self'"],
          'frame-ancestors': ["'none'"],
        },
      },
      strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true },
      frameguard: { action: 'deny' },
      // The unsubscribe token travels in a URL: never leak it through Referer.
      referrerPolicy: { policy: 'no-referrer' },
      crossOriginResourcePolicy: { policy: 'same-origin' },
    }),
  );
  app.use((_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Permissions-Policy', PERMISSIONS_POLICY);
    next();
  });
  // Deny by default: only the listed origins get CORS headers.
  const origins = new Set(config.corsOrigins);
  app.enableCors({
    origin: (origin, callback) => callback(null, origin !== undefined && origins.has(origin)),
    methods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: [
      'X-Request-Id',
      'Retry-After',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'RateLimit-Policy',
      'Idempotent-Replayed',
    ],
    maxAge: 600,
  });
  app.useBodyParser('json', { limit: JSON_BODY_LIMIT });
  app.useBodyParser('urlencoded', { limit: '64kb', extended: false });
  app.setGlobalPrefix(API_PREFIX, { exclude: UNPREFIXED });

  if (config.env !== 'production') {
    const document = SwaggerModule.createDocument(
      app,
      new DocumentBuilder()
        .setTitle(`${config.project.projectSlug} API`)
        .setDescription('Subscription service API (release 0.1.2). Errors are RFC 9457 problem+json.')
        .setVersion('0.1.2')
        .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })
        .build(),
    );
    SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/openapi.json' });
  }
}

/** Express-level errors (body parser: bad JSON, 413) never reach Nest's filters: answer them here too. */
export function installFallbackErrorHandler(app: NestExpressApplication): void {
  app.use((err: unknown, req: Request & { id?: string }, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const { problem, headers } = toProblem(err, req.id);
    sendProblem(res, problem, headers);
  });
}
