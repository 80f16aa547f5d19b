import { API_PREFIX } from '../common/http/api-prefix.js';
import type { Server } from 'node:http';
import { type INestApplication, RequestMethod } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import type { AppConfig } from '../config/app-config.js';
import { NotFoundError } from '../common/errors/app-error.js';
import { ProblemDetailsFilter, sendProblem, toProblem } from '../common/filters/problem-details.filter.js';
import { installBodyParsers } from '../common/http/body-limits.js';
import {
  hostRequired,
  ignoreConditionalRequests,
  installServerEdge,
  serverTimeouts,
} from '../common/http/server-edge.js';
import { requestIdMiddleware, requestIdOf } from '../common/http/request-id.middleware.js';
import { httpMetricsMiddleware } from '../infra/metrics/http-metrics.middleware.js';
import { MetricsService } from '../infra/metrics/metrics.service.js';
import { HealthService } from '../modules/health/health.service.js';
import { mountQueueDashboard } from '../modules/admin/queue-dashboard/queue-dashboard.mount.js';
import { httpTracingMiddleware } from '../infra/tracing/spans.js';
import { RequestRateLimiter, requestRateLimitMiddleware } from '../modules/auth/request-rate-limit.js';
import { createOpenApiDocument } from './openapi.js';
import { AppLogger } from '../common/logging/app-logger.js';

/** Paths outside /api/v1: the operational trio and the webhook receivers. */
const UNPREFIXED = [
  { path: 'health', method: RequestMethod.GET },
  { path: 'health/ready', method: RequestMethod.GET },
  { path: 'status', method: RequestMethod.GET },
  { path: 'webhooks/identity', method: RequestMethod.POST },
  { path: 'webhooks/billing', method: RequestMethod.POST },
  { path: 'webhooks/email', method: RequestMethod.POST },
];

const NO_ROUTE = 'No route or resource matches this request.';

const PERMISSIONS_POLICY =
  'accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), payment=(), usb=(), interest-cohort=()';

/**
 * Everything about the HTTP surface that is not a route: request ids, security headers, CORS, body
 * limits, the /api/v1 prefix and the docs. Shared by main.ts and the e2e tests so both see the same app.
 */
export async function configureApiApp(app: NestExpressApplication, config: AppConfig): Promise<void> {
  app.useLogger(app.get(AppLogger));
  app.flushLogs();
  const securityHeaders = configureHttpEdge(app, config);
  const metrics = app.get(MetricsService);
  app.use(livenessFastPath(JSON.stringify(app.get(HealthService).liveness()), securityHeaders, metrics));
  app.use(requestIdMiddleware);
  // OTEL_EXPORTER_OTLP_ENDPOINT set: a span per request (the liveness probe above stays untraced).
  if (config.otlpEndpoint) app.use(httpTracingMiddleware());
  app.use(httpMetricsMiddleware(metrics));
  app.use(securityHeaders);
  // Client IPs for the per-IP limit: behind N reverse proxies, the address N hops back in X-Forwarded-For.
  if (config.limits.trustProxyHops > 0) app.set('trust proxy', config.limits.trustProxyHops);
  app.use(requestRateLimitMiddleware(app.get(RequestRateLimiter)));
  // API answers carry personal data, tokens and keys: no cache keeps them unless a route opts in with
  // its own @Header('Cache-Control', ...), which is set when the handler answers and so wins.
  app.use(`/${API_PREFIX}`, (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Cache-Control', 'no-store');
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
      // The export's filename (GET /api/v1/account/me/export): not a CORS-safelisted header.
      'Content-Disposition',
    ],
    maxAge: 600,
  });
  installBodyParsers(app, config);
  mountQueueDashboard(app, config);
  setApiPrefix(app);

  if (config.env !== 'production') {
    // The same document as the committed openapi.json (nothing in it depends on the configuration).
    const document = await createOpenApiDocument(app);
    SwaggerModule.setup('docs', app, document, {
      jsonDocumentUrl: 'docs/openapi.json',
      swaggerOptions: { persistAuthorization: true },
    });
    const http = app.getHttpAdapter();
    http.get('/docs-json', (_req, res) => http.reply(res, document, 200));
  }
}

/**
 * The worker's port (health, readiness, status, metrics) answers like the API: problem+json errors that
 * never echo the path (Nest's default answered `{"message":"Cannot GET /x"}`), the HTTP edge of
 * `configureHttpEdge`, request ids and the security headers. It reads no body (create it with
 * `bodyParser: false`) and no route of it takes a query. Shared by worker.ts and the e2e tests; call
 * installFallbackErrorHandler after app.init() as for the API.
 */
export function configureWorkerApp(app: NestExpressApplication, config: AppConfig): void {
  const securityHeaders = configureHttpEdge(app, config);
  app.use(requestIdMiddleware);
  app.use(securityHeaders);
  app.useGlobalFilters(new ProblemDetailsFilter());
}

/**
 * What the API and the worker share below the routes: no X-Powered-By, no ETags, conditional request
 * headers without effect, Node's own answers (parser refusals, Expect, a missing Host, timeouts) as
 * problem+json with the security headers. Returns the security headers middleware.
 */
function configureHttpEdge(app: NestExpressApplication, config: AppConfig) {
  app.disable('x-powered-by');
  // Answers are never cached (no-store) or are small aggregates: a SHA-1 of every body buys nothing.
  app.set('etag', false);
  ignoreConditionalRequests(app.getHttpAdapter().getInstance());
  const securityHeaders = securityHeadersMiddleware();
  const staticHeaders = headersSetBy(securityHeaders);
  installServerEdge(app.getHttpServer() as Server, staticHeaders, serverTimeouts(config));
  app.use(hostRequired(staticHeaders));
  return securityHeaders;
}

/** The /api/v1 prefix on every route but the operational trio and the webhook receivers. */
export function setApiPrefix(app: INestApplication): void {
  app.setGlobalPrefix(API_PREFIX, { exclude: UNPREFIXED });
}

/** helmet's headers (static CSP, HSTS, X-Frame-Options, Referrer-Policy, ...) plus Permissions-Policy. */
function securityHeadersMiddleware() {
  const headers = helmet({
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
  });
  return (req: Request, res: Response, next: NextFunction): void => {
    res.setHeader('Permissions-Policy', PERMISSIONS_POLICY);
    headers(req, res, next);
  };
}

/**
 * GET /health, the load balancers' probe, answered first: a constant body with the request id, the
 * security headers and its metrics, but without the request context, body parsing, request logging
 * (health paths are never logged) or Nest's routing (its target is under 1 ms). A request with an
 * Origin header takes the normal path, which answers it with the CORS headers. HealthController keeps
 * the documented route.
 */
function livenessFastPath(
  body: string,
  securityHeaders: (req: Request, res: Response, next: NextFunction) => void,
  metrics: MetricsService,
) {
  const fixed = [
    ...headersSetBy(securityHeaders),
    'Cache-Control',
    'no-store',
    'Content-Type',
    'application/json; charset=utf-8',
    'Content-Length',
    String(Buffer.byteLength(body)),
  ];
  const labels = { method: 'GET', route: '/health' };
  const counted = { ...labels, status: '200' };
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method !== 'GET' || req.url !== '/health' || req.headers.origin !== undefined) return next();
    const started = performance.now();
    res.writeHead(200, [...fixed, 'X-Request-Id', requestIdOf(req)]);
    res.end(body);
    metrics.httpDuration.observe(labels, (performance.now() - started) / 1000);
    metrics.httpRequests.inc(counted);
  };
}

/**
 * The headers a middleware sets, recorded once as a flat [name, value, ...] list. For the security
 * headers that is every response's set: helmet's values are fixed by its configuration.
 */
function headersSetBy(middleware: (req: Request, res: Response, next: NextFunction) => void): string[] {
  const headers: string[] = [];
  const recorder = {
    setHeader: (name: string, value: unknown) => headers.push(name, String(value)),
    removeHeader: () => undefined,
    getHeader: () => undefined,
  };
  let called = false;
  middleware(
    { headers: {}, method: 'GET', url: '/health' } as Request,
    recorder as unknown as Response,
    () => {
      called = true;
    },
  );
  if (!called || headers.length === 0) throw new Error('security headers are not static: no fast path');
  return headers;
}

/**
 * Express-level errors (body parser: bad JSON, 413) never reach Nest's filters: answer them here too.
 * Nest's own not-found answer covers only paths under the global prefix; any other path nobody serves
 * (next to the docs, the probes and the webhook receivers) gets the same 404 problem+json here instead of
 * Express's HTML page. Registered after app.init(), so after every route.
 */
export function installFallbackErrorHandler(app: NestExpressApplication): void {
  app.use((req: Request & { id?: string }, res: Response) => {
    const { problem, headers } = toProblem(new NotFoundError(NO_ROUTE), req.id);
    sendProblem(res, problem, headers);
  });
  app.use((err: unknown, req: Request & { id?: string }, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const { problem, headers } = toProblem(err, req.id);
    sendProblem(res, problem, headers);
  });
}
