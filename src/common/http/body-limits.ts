import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import type { AppConfig } from '../../config/app-config.js';
import { type AppError, PayloadTooLargeError, ValidationError } from '../errors/app-error.js';
import { MAX_INPUT_DEPTH } from '../validation/validation.pipe.js';
import { sendProblem, toProblem } from '../filters/problem-details.filter.js';

/** Form bodies: only the one-click unsubscribe reads one (`List-Unsubscribe=One-Click`). */
export const FORM_BODY_LIMIT = '64kb';

/**
 * Routes whose JSON bodies may be large: the metered completions (DESIGN 5c: at least 256 KB of
 * messages) and the providers' webhooks (their payloads are theirs to size). Everything else is small.
 */
export function takesLargeBody(path: string): boolean {
  return path === '/api/v1/ai/completions' || path.startsWith('/webhooks/');
}

/** The webhook receivers verify a signature over the raw bytes and parse with their own schemas. */
const isWebhook = (path: string): boolean => path.startsWith('/webhooks/');

/** body-parser's own default (`application/json`, parameters ignored), decided per request. */
function isJson(req: Request): boolean {
  const type = req.headers['content-type'];
  return typeof type === 'string' && type.split(';')[0].trim().toLowerCase() === 'application/json';
}

/**
 * Why a parsed JSON value is too big to hand to class-transformer, or null: more than `maxNodes` keys
 * and values in all, or an object with more than `maxKeys` keys. class-transformer de-duplicates each
 * object's keys in O(n^2) (70,000 keys: about 4 s of event-loop time), so this runs first. Iterative and
 * stops at the first excess, so refusing costs at most `maxNodes` steps. Nesting deeper than the
 * validation pipe's bound is its 400, found here first.
 */
export function jsonSizeProblem(
  value: unknown,
  maxNodes: number,
  maxKeys: number,
): { status: 400 | 413; message: string } | null {
  const stack: { node: unknown; depth: number }[] = [{ node: value, depth: 0 }];
  let nodes = 0;
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    // The validation pipe's own depth bound, answered the same way (400) but before the walk goes on.
    if (depth >= MAX_INPUT_DEPTH) {
      return { status: 400, message: `the request is nested deeper than ${MAX_INPUT_DEPTH} levels` };
    }
    // Arrays count towards the total only: the quadratic key filter is about objects.
    const isObject = !Array.isArray(node);
    let keys = 0;
    for (const key in node) {
      if (!Object.hasOwn(node, key)) continue;
      keys += 1;
      nodes += 1;
      if (isObject && keys > maxKeys) {
        return { status: 413, message: `an object in the request body has more than ${maxKeys} keys` };
      }
      if (nodes > maxNodes) {
        return { status: 413, message: `the request body has more than ${maxNodes} keys and values` };
      }
      stack.push({ node: (node as Record<string, unknown>)[key], depth: depth + 1 });
    }
  }
  return null;
}

function refuse(req: Request, res: Response, error: AppError): void {
  const { problem, headers } = toProblem(error, req.id === undefined ? undefined : String(req.id));
  sendProblem(res, problem, headers);
}

/**
 * JSON bodies: the small limit everywhere, the large one on the routes that need it, each enforced by
 * body-parser while it reads (a chunked body is cut off as well); then the key count. Too big in bytes or
 * in keys is 413 `payload_too_large`, before authentication and before any DTO transformation.
 */
export function installBodyParsers(app: NestExpressApplication, config: AppConfig): void {
  const { bodyBytes, largeBodyBytes, jsonMaxNodes, jsonMaxObjectKeys } = config.limits;
  app.useBodyParser('json', {
    limit: largeBodyBytes,
    type: (req) => isJson(req as Request) && takesLargeBody((req as Request).path),
  });
  app.useBodyParser('json', {
    limit: bodyBytes,
    type: (req) => isJson(req as Request) && !takesLargeBody((req as Request).path),
  });
  app.useBodyParser('urlencoded', { limit: FORM_BODY_LIMIT, extended: false });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (isWebhook(req.path) || typeof req.body !== 'object' || req.body === null) return next();
    const problem = jsonSizeProblem(req.body, jsonMaxNodes, jsonMaxObjectKeys);
    if (problem?.status === 400) return refuse(req, res, new ValidationError(problem.message));
    if (problem)
      return refuse(req, res, new PayloadTooLargeError(`The request body is too large: ${problem.message}.`));
    next();
  });
}
