import { API_PREFIX } from '../common/http/api-prefix.js';
import { randomUUID } from 'node:crypto';
import { type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type INestApplication, RequestMethod } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import type { AppConfig } from '../config/app-config.js';
import { NotFoundError } from '../common/errors/app-error.js';
import { buildProblem, sendProblem, toProblem } from '../common/filters/problem-details.filter.js';
import { installBodyParsers } from '../common/http/body-limits.js';
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
  app.disable('x-powered-by');
  // Answers are never cached (no-store) or are small aggregates: a SHA-1 of every body buys nothing.
  app.set('etag', false);
  const securityHeaders = securityHeadersMiddleware();
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
  installClientErrorHandler(app.getHttpServer() as Server, headersSetBy(securityHeaders));

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

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large', 'The request headers or URL are too large.'],
  HPE_URI_TOO_LONG: [414, 'URI too long', 'The request URL is too long.'],
};

/**
 * Requests Node's HTTP parser refuses (headers or URL over its limit, malformed HTTP) never reach
 * Express. Node would answer them with an empty body; answer problem+json like every other error, with
 * the security headers every response carries and a request id (always a new one: nothing of the
 * request was parsed that could be trusted).
 */
function installClientErrorHandler(server: Server, securityHeaders: string[]): void {
  const fixed: string[] = [];
  for (let i = 0; i < securityHeaders.length; i += 2) {
    fixed.push(`${securityHeaders[i]}: ${securityHeaders[i + 1]}\r\n`);
  }
  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, title, detail] = CLIENT_ERRORS[err.code ?? ''] ?? [
      400,
      'Invalid request',
      'The request is malformed.',
    ];
    const requestId = randomUUID();
    const body = JSON.stringify(buildProblem(status, detail, requestId, { title }));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\n` +
        `X-Request-Id: ${requestId}\r\n${fixed.join('')}Connection: close\r\n\r\n${body}`,
    );
  });
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
