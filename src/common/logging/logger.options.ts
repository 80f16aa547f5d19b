import type { Params } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import type { AppConfig } from '../../config/app-config.js';

const QUIET_PATHS = new Set(['/health', '/health/ready', '/status', '/metrics']);

/**
 * Structured JSON logs. Requests are logged as method, path (never the query string: the unsubscribe
 * token travels there), status and timing. Headers, bodies, tokens and secrets are never logged.
 */
export function loggerOptions(config: AppConfig, stream?: DestinationStream): Params {
  return {
    pinoHttp: [
      {
        level: config.logLevel,
        base: { service: config.project.projectSlug, env: config.env },
        genReqId: (req) => (req as { id?: string }).id ?? 'unknown',
        autoLogging: { ignore: (req) => QUIET_PATHS.has((req.url ?? '').split('?')[0]) },
        serializers: {
          req: (req: { id?: string; method?: string; url?: string }) => ({
            id: req.id,
            method: req.method,
            path: (req.url ?? '').split('?')[0],
          }),
          res: (res: { statusCode?: number }) => ({ status: res.statusCode }),
          // Many call sites log `{ err: error.message }`: a string is kept as it is, not serialized to {}.
          err: (err: unknown) => {
            if (typeof err !== 'object' || err === null) return err;
            const e = err as Error & { code?: unknown };
            return { type: e.name, message: e.message, code: e.code, stack: e.stack };
          },
        },
        redact: {
          paths: [
            'req.headers.authorization',
            'req.headers.cookie',
            '*.authorization',
            '*.password',
            '*.secret',
            '*.token',
          ],
          censor: '[redacted]',
        },
        // A 5xx answered without an error object (ProblemDetailsFilter answers every error itself and logs
        // it with its real stack) makes pino-http invent `new Error('failed with status code 500')`, whose
        // stack points into pino-http. Dropped: one stack trace per failure, the real one.
        customErrorObject: (_req, _res, error, val: Record<string, unknown>) => {
          if (error instanceof Error && /^failed with status code \d+$/.test(error.message)) {
            const { err: _synthetic, ...rest } = val;
            return rest;
          }
          return val;
        },
        customLogLevel: (_req, res, err) =>
          err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'info',
      },
      ...(stream ? [stream] : []),
    ] as Params['pinoHttp'],
  };
}
