import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { requestContext } from './request-context.js';

const SANE_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * Gives every request an id (the client's X-Request-Id when it looks sane, else a new UUID), echoes it
 * on the response and makes it available to logs and audit entries through the request context.
 */
export function requestIdMiddleware(req: Request & { id?: string }, res: Response, next: NextFunction): void {
  const id = requestIdOf(req);
  req.id = id;
  res.setHeader('X-Request-Id', id);
  requestContext.run({ requestId: id }, next);
}

/** The client's X-Request-Id when it looks sane, else a new UUID. */
export function requestIdOf(req: Request): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : randomUUID();
}
