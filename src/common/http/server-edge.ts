import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import { buildProblem, PROBLEM_CONTENT_TYPE } from '../filters/problem-details.filter.js';
import { isClosing, markClosing } from './closing-connections.js';
import { requestIdOf } from './request-id.middleware.js';

/**
 * How long Node's HTTP server waits for a request, the same for the API and the worker's port. Node's
 * defaults (60 s for the headers, 300 s for the whole request, each checked every 30 s) let a client that
 * sends a body shorter than its Content-Length hold a connection for about 312 s, and headers that never
 * end for about 72 s. The whole-request and keep-alive timeouts depend on the configuration
 * (`serverTimeouts`).
 */
export const SERVER_TIMEOUTS = {
  /** The request line and the headers (`server.headersTimeout`). */
  headersMs: 20_000,
  /**
   * The slowest upload a client is granted: the whole request (`server.requestTimeout`) may take as long
   * as the largest body (BODY_LIMIT_LARGE_KB, the completions and the webhooks) needs at this rate
   * (12,000 bytes/s, 96 kbit/s, a poor mobile link: 1 MB in about 87 s), never less than `minRequestMs`.
   * Only receiving counts: a slow answer is not cut off.
   */
  minUploadBytesPerSecond: 12_000,
  minRequestMs: 60_000,
  /** How often Node looks for requests over those limits (`connectionsCheckingInterval`, default 30 s). */
  checkIntervalMs: 1_000,
};

/** The timeouts installServerEdge gives Node's HTTP server. */
export interface ServerTimeouts {
  headersMs: number;
  requestMs: number;
  /**
   * An idle kept-alive connection (`server.keepAliveTimeout`, Node's default 5 s; KEEP_ALIVE_TIMEOUT_MS,
   * 65 s by default): longer than the idle timeout of the reverse proxy in front (60 s for AWS ALB and
   * nginx's upstream keep-alive, a fixed 600 s for Google Cloud's load balancers), so the proxy closes an
   * idle connection first and never sends a request on one the server is closing (a sporadic 502).
   */
  keepAliveMs: number;
  checkIntervalMs: number;
}

export function serverTimeouts(config: {
  keepAliveTimeoutMs: number;
  limits: { largeBodyBytes: number };
}): ServerTimeouts {
  const bodyMs = Math.ceil((config.limits.largeBodyBytes * 1000) / SERVER_TIMEOUTS.minUploadBytesPerSecond);
  return {
    headersMs: SERVER_TIMEOUTS.headersMs,
    requestMs: Math.max(SERVER_TIMEOUTS.minRequestMs, bodyMs),
    keepAliveMs: config.keepAliveTimeoutMs,
    checkIntervalMs: SERVER_TIMEOUTS.checkIntervalMs,
  };
}

/**
 * Options of Node's HTTP server that are read from the instance but missing from its typings: the interval
 * is read when the server starts listening, requireHostHeader on every request.
 */
export type TunableServer = Server & { connectionsCheckingInterval: number; requireHostHeader: boolean };

/** Node's parser errors we answer with their own status; anything else is a 400. */
const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large', 'The request headers or URL are too large.'],
  HPE_URI_TOO_LONG: [414, 'URI too long', 'The request URL is too long.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timeout', 'The request did not arrive in time.'],
};

/** A problem document as the bytes and the headers of a complete answer that closes the connection. */
function edgeAnswer(
  status: number,
  detail: string,
  requestId: string,
  securityHeaders: string[],
  title?: string,
): { body: string; headers: string[] } {
  const body = JSON.stringify(buildProblem(status, detail, requestId, title ? { title } : {}));
  return {
    body,
    headers: [
      ...securityHeaders,
      'Content-Type',
      PROBLEM_CONTENT_TYPE,
      'Content-Length',
      String(Buffer.byteLength(body)),
      'Cache-Control',
      'no-store',
      'X-Request-Id',
      requestId,
      'Connection',
      'close',
    ],
  };
}

function answer(
  res: ServerResponse,
  status: number,
  detail: string,
  requestId: string,
  securityHeaders: string[],
): void {
  const { body, headers } = edgeAnswer(status, detail, requestId, securityHeaders);
  markClosing(res.socket);
  res.writeHead(status, headers);
  res.end(body);
}

/**
 * What Node's HTTP server answers itself, before Express sees the request, made to answer like every
 * other error: problem+json with the security headers every response carries (`securityHeaders`, the
 * static [name, value, ...] list) and a request id.
 *
 * - Requests its parser refuses (`clientError`: malformed, headers or URL over the limit, a request that
 *   did not arrive within its timeouts) get 400/431/414/408 instead of Node's empty answer, with a new
 *   request id (nothing of such a request is trusted).
 * - An `Expect` other than `100-continue` gets 417 (`checkExpectation`) instead of an empty one.
 * - An HTTP/1.1 request without Host is left to `hostRequired` (Node's own check answers an empty 400).
 * - The timeouts of `serverTimeouts`.
 */
export function installServerEdge(server: Server, securityHeaders: string[], timeouts: ServerTimeouts): void {
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.keepAliveTimeout = timeouts.keepAliveMs;
  (server as TunableServer).connectionsCheckingInterval = timeouts.checkIntervalMs;
  (server as TunableServer).requireHostHeader = false;

  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    answer(
      res,
      417,
      'The Expect header asks for something this server does not do (only 100-continue is supported).',
      requestIdOf(req as Request),
      securityHeaders,
    );
  });

  server.on('clientError', (err: Error & { code?: string }, socket: Duplex) => {
    // As Node's own handler: answer only when nothing of an answer went out on this connection yet.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, title, detail] = CLIENT_ERRORS[err.code ?? ''] ?? [
      400,
      'Invalid request',
      'The request is malformed.',
    ];
    const { body, headers } = edgeAnswer(status, detail, randomUUID(), securityHeaders, title);
    let head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n`;
    for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
    // Half-closing is not enough: Node's parser would go on parsing what keeps arriving (a body that
    // trickles in past the timeout, the rest of the headers) and run the route after this answer, and a
    // client that keeps its side open would hold the connection. Stop reading, answer, then close.
    socket.pause();
    socket.end(`${head}\r\n${body}`, () => socket.destroy());
  });
}

/**
 * RFC 9112 section 3.2: an HTTP/1.1 request without a Host header is a 400. Node's own check (turned off
 * by installServerEdge) answered it with an empty body; this one answers problem+json. First in the chain,
 * so it also drops a request pipelined behind one refused with `Connection: close` (`isClosing`).
 */
export function hostRequired(securityHeaders: string[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    // Pipelined behind a request refused with `Connection: close`: never run, never answered.
    if (isClosing(req.socket)) {
      req.socket.destroy();
      return;
    }
    if (req.headers.host !== undefined || req.httpVersion !== '1.1') return next();
    answer(
      res,
      400,
      'The request has no Host header, which HTTP/1.1 requires.',
      requestIdOf(req),
      securityHeaders,
    );
  };
}

/**
 * Conditional requests (`If-None-Match`, `If-Modified-Since`) never turn an answer into a 304. ETags are
 * off and API answers are no-store, but Express's freshness check (`req.fresh`, run by every res.send)
 * still answered `If-None-Match: *` with an empty 304 on every GET, /status and the readiness probe
 * included. No route offers validators; static files (the docs outside production) keep their own
 * handling, which `send` does without `req.fresh`.
 */
export function ignoreConditionalRequests(expressApp: { request: object }): void {
  Object.defineProperty(expressApp.request, 'fresh', { configurable: true, get: () => false });
  Object.defineProperty(expressApp.request, 'stale', { configurable: true, get: () => true });
}
