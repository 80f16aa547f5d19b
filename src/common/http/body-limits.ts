import { isUtf8 } from 'node:buffer';
import { unescape as unescapeQuery } from 'node:querystring';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import type { AppConfig } from '../../config/app-config.js';
import {
  type AppError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors/app-error.js';
import {
  clipText,
  invalidPercentEscape,
  jsonTextProblem,
  mayHoldLoneSurrogate,
} from '../validation/unicode.js';
import { MAX_INPUT_DEPTH } from '../validation/validation.pipe.js';
import { BAD_PATH_ESCAPE, sendProblem, toProblem } from '../filters/problem-details.filter.js';
import { API_PREFIX } from './api-prefix.js';
import { markClosing } from './closing-connections.js';
import { isSignedLinkRoute, routePath } from './signed-link-routes.js';

/** Form bodies: only the routes that document one take it (the signed-link routes, `isSignedLinkRoute`), and none decodes it. */
export const FORM_BODY_LIMIT = '64kb';
const FORM_BODY_BYTES = 64 * 1024;

/** The webhook receivers verify a signature over the raw bytes and parse with their own schemas. */
const isWebhook = (path: string): boolean => routePath(path).startsWith('/webhooks/');

/**
 * Routes whose JSON bodies may be large: the metered completions (DESIGN 5c: at least 256 KB of
 * messages) and the providers' webhooks (their payloads are theirs to size). Everything else is small.
 */
export function takesLargeBody(path: string): boolean {
  return routePath(path) === '/api/v1/ai/completions' || isWebhook(path);
}

/**
 * The routes whose documented body is a form (or multipart): the one-click unsubscribe (RFC 8058: mail
 * clients POST `List-Unsubscribe=One-Click`) and the double opt-in confirmation, both also POSTed by the
 * HTML page each shows. They ignore their body: the token in `t` authenticates. A form body is read as
 * bytes under FORM_BODY_LIMIT (413 beyond it) but never decoded, so a mail client's charset (body-parser's
 * form parser answered 415 to anything but utf-8 and iso-8859-1, e.g. `charset=us-ascii`) cannot refuse
 * an unsubscribe.
 */
const takesForm = isSignedLinkRoute;

/**
 * The operational probes (`/health`, `/health/ready`, `/status`) read neither their query string nor a
 * body: a load balancer's or a monitor's extra bytes must not turn "always 200" into a 400.
 */
export const isProbe = (path: string): boolean => {
  const route = routePath(path);
  return route === '/health' || route === '/health/ready' || route === '/status';
};

/** A route under /api/v1: the bodies it reads are JSON (forms only on the signed-link routes). */
const isApiRoute = (path: string): boolean => routePath(path).startsWith(`/${API_PREFIX}/`);

/**
 * The request announces a body: a Content-Length above 0, or a Transfer-Encoding (a chunked body's size is
 * unknown until read, so one that turns out empty counts too).
 */
const announcesBody = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;

/** The request's media type without parameters, lower-cased; '' when there is none. */
function mediaType(req: Request): string {
  const type = req.headers['content-type'];
  return typeof type === 'string' ? type.split(';')[0].trim().toLowerCase() : '';
}

/** A form body (`application/x-www-form-urlencoded`, parameters ignored). */
const isForm = (req: Request): boolean => mediaType(req) === 'application/x-www-form-urlencoded';

/** body-parser's own default (`application/json`, parameters ignored), decided per request. */
const isJson = (req: Request): boolean => mediaType(req) === 'application/json';

/** The `charset` parameter of the request's media type, lower-cased and unquoted; undefined without one. */
export function charsetOf(contentType: string | undefined): string | undefined {
  if (typeof contentType !== 'string') return undefined;
  for (const param of contentType.split(';').slice(1)) {
    const eq = param.indexOf('=');
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    return param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
  }
  return undefined;
}

/**
 * JSON is UTF-8 (RFC 8259 section 8.1): a JSON body declared in another charset (`latin1`, `utf-16`, ...)
 * is refused with 415 rather than decoded as UTF-8 behind the client's back (`café` in Latin-1 was stored
 * as `caf\ufffd`). No charset, `utf-8` and its alias `utf8` are read, and `us-ascii`, whose bytes are
 * UTF-8 (a body that is not ASCII after all is refused by the UTF-8 check, 400).
 */
const isUtf8Charset = (charset: string | undefined): boolean =>
  charset === undefined || charset === 'utf-8' || charset === 'utf8' || charset === 'us-ascii';

/**
 * Why a JSON body is too big to parse and hand to class-transformer, or null, read from its bytes before
 * JSON.parse: more than `maxNodes` values in all, an object with more than `maxKeys` keys, or nesting
 * deeper than the validation pipe's bound (its 400). class-transformer de-duplicates each object's keys in
 * O(n^2) (70,000 keys: about 4 s of event-loop time), and JSON.parse alone spends 50-90 ms on such a body,
 * so the refusal comes from one pass over the bytes (about 1 ms for 740 KB) that stops at the first excess.
 * Invalid JSON is left to JSON.parse.
 */
export function jsonSizeProblem(
  body: Uint8Array,
  maxNodes: number,
  maxKeys: number,
): { status: 400 | 413; message: string } | null {
  // Per open container: -1 for an array, else the keys seen so far in the object.
  const keys: number[] = [];
  let nodes = 0;
  let inString = false;
  let arrayOpened = false;
  for (let i = 0; i < body.length; i += 1) {
    const c = body[i];
    if (inString) {
      if (c === 0x5c) i += 1;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (arrayOpened) {
      arrayOpened = false;
      if (c !== 0x5d) nodes += 1; // the first element of a non-empty array
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (keys.length >= MAX_INPUT_DEPTH) {
        return { status: 400, message: `the request is nested deeper than ${MAX_INPUT_DEPTH} levels` };
      }
      keys.push(c === 0x7b ? 0 : -1);
      arrayOpened = c === 0x5b;
    } else if (c === 0x7d || c === 0x5d) keys.pop();
    else if (c === 0x3a && keys.length > 0 && keys[keys.length - 1] >= 0) {
      keys[keys.length - 1] += 1;
      nodes += 1;
      if (keys[keys.length - 1] > maxKeys) {
        return { status: 413, message: `an object in the request body has more than ${maxKeys} keys` };
      }
    } else if (c === 0x2c && keys[keys.length - 1] === -1) nodes += 1;
    if (nodes > maxNodes) {
      return { status: 413, message: `the request body has more than ${maxNodes} keys and values` };
    }
  }
  return null;
}

/** body-parser's JSON errors, so the fallback handler answers them as before (400 not valid JSON). */
const parseFailed = (message: string) =>
  Object.assign(new SyntaxError(message), {
    status: 400,
    statusCode: 400,
    expose: true,
    type: 'entity.parse.failed',
  });

function refuse(req: Request, res: Response, error: AppError): void {
  const { problem, headers } = toProblem(error, req.id === undefined ? undefined : String(req.id));
  sendProblem(res, problem, headers);
}

/** At most this much of a refused run of escapes is quoted back (eight bytes). */
const QUOTED_ESCAPES = 24;

/**
 * A 400 for a query string whose percent-escapes are not UTF-8, naming the parameter when they are in its
 * value (its name comes first, so its escapes were found to be UTF-8); null when every escape decodes.
 */
function percentEscapeRefusal(encoded: string, what: 'query string'): ValidationError | null {
  const bad = invalidPercentEscape(encoded);
  if (bad === null) return null;
  const pair = encoded.slice(encoded.lastIndexOf('&', bad.at) + 1, bad.at);
  const eq = pair.indexOf('=');
  const field = eq === -1 ? null : clipText(unescapeQuery(pair.slice(0, eq).replaceAll('+', ' ')), 100);
  const shown = bad.escape.length > QUOTED_ESCAPES ? `${bad.escape.slice(0, QUOTED_ESCAPES)}…` : bad.escape;
  const message = `${shown} does not encode UTF-8 text`;
  const problem =
    field === null
      ? message
      : `the value of ${JSON.stringify(field)} holds ${shown}, which does not encode UTF-8 text`;
  return new ValidationError(
    `The ${what} is not valid UTF-8: ${problem} (percent-escapes stand for the bytes of UTF-8 text).`,
    field === null ? [] : [{ field, message }],
  );
}

/**
 * A query string whose percent-escapes are not UTF-8, on any route but the webhook receivers' and the probes'
 * (they read no query): Express's `simple` parser (node:querystring) decoded them as U+FFFD, so a filter or
 * a token became another value. Only a query holding a `%` is scanned; any other request costs two string
 * searches.
 */
function queryTextRefusal(req: Request): ValidationError | null {
  const query = req.url.indexOf('?');
  if (query === -1 || req.url.indexOf('%', query) === -1 || isWebhook(req.path) || isProbe(req.path)) {
    return null;
  }
  return percentEscapeRefusal(req.url.slice(query + 1), 'query string');
}

/**
 * A path whose percent-escapes are not UTF-8 (`/api/v1/saved_searches/%ff`): the same 400 on every path,
 * routed or not, and never quoting it (unknown paths are not echoed). The router refuses a malformed
 * escape in a path parameter (`%zz`) itself; the filter answers that one with the same problem.
 */
function pathTextRefusal(req: Request): ValidationError | null {
  const query = req.url.indexOf('?');
  const path = query === -1 ? req.url : req.url.slice(0, query);
  if (path.indexOf('%') === -1 || invalidPercentEscape(path) === null) return null;
  return new ValidationError(BAD_PATH_ESCAPE);
}

/** The 415 of a body that is not JSON on a JSON route. */
const notJsonRefusal = () =>
  new UnsupportedMediaTypeError(
    'This route reads JSON: send the body as application/json (Content-Type: application/json).',
  );

/**
 * A body on an API route that is not JSON (a form, text/plain, multipart, no Content-Type with a
 * Content-Length above 0): 415
 * before it is read. It used to be ignored (`PATCH /me` sent as text/plain answered 200 and changed
 * nothing) or, for a form, decoded and validated like JSON (`POST /workspaces` with `name=x` created one).
 */
function mediaTypeRefusal(req: Request): UnsupportedMediaTypeError | null {
  if (!announcesBody(req) || isJson(req) || !isApiRoute(req.path) || takesForm(req.path)) return null;
  // No Content-Type and no length (a chunked body): empty or not is known only once it arrives
  // (`untypedChunkedBody`, decided by `peekBody`).
  if (req.headers['content-type'] === undefined && !(Number(req.headers['content-length']) > 0)) return null;
  return notJsonRefusal();
}

/**
 * A chunked body without Content-Type on an API route that reads JSON. Proxies that re-frame HTTP/2 send
 * an empty POST so, which must pass; one that holds a byte is a body that is not JSON (415, like a sized
 * one). Its size is unknown until it arrives, so `peekBody` waits for its first chunk or its end.
 */
const untypedChunkedBody = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined &&
  req.headers['content-type'] === undefined &&
  isApiRoute(req.path) &&
  !takesForm(req.path);

/**
 * Waits for a body's first bytes or its end and tells which came first: `decide(true)` when it holds a
 * byte (the request is paused then: nothing more is read than the first chunk the socket delivered, at
 * most one socket read), `decide(false)` when it ended empty (nothing was read; the request is complete).
 * A request whose connection goes away first is never decided (there is no one to answer).
 */
function peekBody(req: Request, decide: (hasBytes: boolean) => void): void {
  const settle = (hasBytes: boolean | null) => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('close', onGone);
    req.off('error', onGone);
    if (hasBytes) req.pause();
    if (hasBytes !== null) decide(hasBytes);
  };
  const onData = (chunk: Buffer) => {
    if (chunk.length > 0) settle(true);
  };
  const onEnd = () => settle(false);
  const onGone = () => settle(null);
  req.on('data', onData);
  req.once('end', onEnd);
  req.once('close', onGone);
  req.once('error', onGone);
}

/**
 * JSON bodies: the small limit everywhere, the large one on the routes that need it, each enforced by
 * body-parser while it reads (a chunked body is cut off as well); then the charset, the key count on the
 * bytes, the UTF-8 check, JSON.parse, and unpaired surrogates in the parsed strings. Too big in bytes or in
 * keys is 413 `payload_too_large`, a charset other than UTF-8 is 415 `unsupported_media_type`, bytes that
 * are not UTF-8 and strings with an unpaired surrogate (`"a\ud800"`) are 400 `validation_failed`, all
 * before authentication and before any DTO transformation. Before any body is read: a path or a query
 * string whose percent-escapes are not UTF-8 is 400 `validation_failed`, and a body that is not JSON on an
 * API route is 415 `unsupported_media_type` (forms only where the signed-link routes document one, read as bytes and
 * never decoded; a chunked body without Content-Type once its first chunk holds a byte). The webhook
 * receivers keep their raw bytes and their own rules; the probes read nothing.
 */
export function installBodyParsers(app: NestExpressApplication, config: AppConfig): void {
  const { bodyBytes, largeBodyBytes, jsonMaxNodes, jsonMaxObjectKeys } = config.limits;
  // Read as bytes (Nest keeps them as req.rawBody for the webhook signatures), scanned, then parsed here.
  // A webhook's body is read whatever its media type but a form (which keeps the form limit): the
  // signature covers the bytes, and a signed body sent as text/plain (or with no type) was refused as a
  // signature mismatch, which misleads whoever debugs.
  const reads = (req: Request, large: boolean) =>
    !isProbe(req.path) &&
    (isJson(req) || (isWebhook(req.path) && !isForm(req))) &&
    takesLargeBody(req.path) === large;
  const readsForm = (req: Request) => isForm(req) && (takesForm(req.path) || isWebhook(req.path));
  /**
   * A Content-Length over the limit of the parser that would read the body: 413 before reading it.
   * body-parser reads (and drops) the whole announced body before it hands on its own 413.
   */
  const declaredSizeRefusal = (req: Request): PayloadTooLargeError | null => {
    const limit = reads(req, true)
      ? largeBodyBytes
      : reads(req, false)
        ? bodyBytes
        : readsForm(req)
          ? FORM_BODY_BYTES
          : null;
    const length = Number(req.headers['content-length']);
    return limit !== null && length > limit
      ? new PayloadTooLargeError('The request body is too large.')
      : null;
  };
  // First, so a refused path, query string, media type or announced size costs no body read.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const refusal =
      pathTextRefusal(req) ?? queryTextRefusal(req) ?? mediaTypeRefusal(req) ?? declaredSizeRefusal(req);
    if (refusal) return refuse(req, res, refusal);
    if (!untypedChunkedBody(req)) return next();
    peekBody(req, (hasBytes) => {
      if (!hasBytes) return next();
      // The rest of the body is never read: the connection closes after the answer, even when the
      // first chunk happened to hold all of it.
      res.setHeader('Connection', 'close');
      markClosing(req.socket);
      refuse(req, res, notJsonRefusal());
    });
  });
  app.useBodyParser('raw', { limit: largeBodyBytes, type: (req: unknown) => reads(req as Request, true) });
  app.useBodyParser('raw', { limit: bodyBytes, type: (req: unknown) => reads(req as Request, false) });
  app.useBodyParser('raw', {
    limit: FORM_BODY_LIMIT,
    type: (req: unknown) => readsForm(req as Request),
  });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!Buffer.isBuffer(req.body)) return next();
    const bytes = req.body;
    // Webhook receivers verify the signature over the exact bytes and parse the JSON themselves, so an
    // authentic body that is not JSON is theirs to trace (audit + log), not a bare parser 400.
    if (isWebhook(req.path)) {
      (req as Request & { rawBody?: Buffer }).rawBody ??= bytes;
      return next();
    }
    if (!isJson(req)) return next();
    const charset = charsetOf(req.headers['content-type']);
    if (!isUtf8Charset(charset)) {
      const named = JSON.stringify(charset!.slice(0, 40));
      return refuse(
        req,
        res,
        new UnsupportedMediaTypeError(
          `JSON bodies are UTF-8 (RFC 8259): charset ${named} is not supported; send charset=utf-8 or none.`,
        ),
      );
    }
    {
      const problem = jsonSizeProblem(bytes, jsonMaxNodes, jsonMaxObjectKeys);
      if (problem?.status === 400) return refuse(req, res, new ValidationError(problem.message));
      if (problem) {
        return refuse(
          req,
          res,
          new PayloadTooLargeError(`The request body is too large: ${problem.message}.`),
        );
      }
    }
    if (bytes.length === 0) {
      req.body = {};
      return next();
    }
    // toString would replace each invalid sequence with U+FFFD and store that instead of what was sent.
    if (!isUtf8(bytes)) {
      return refuse(req, res, new ValidationError('The request body is not valid UTF-8 (JSON is UTF-8).'));
    }
    const text = bytes.toString('utf8');
    // body-parser's strict mode: only an object or an array at the top.
    const first = text.trimStart()[0];
    if (first !== '{' && first !== '[') return next(parseFailed('the top level is not an object or array'));
    try {
      req.body = JSON.parse(text);
    } catch (err) {
      return next(parseFailed((err as Error).message));
    }
    // One rule for every string of every JSON body (values and keys): an unpaired surrogate is refused,
    // not stored as U+FFFD by the text columns or refused by jsonb. Walked only when the text has the escape.
    const field = mayHoldLoneSurrogate(text) ? jsonTextProblem(req.body, { nul: false })?.field : undefined;
    if (field !== undefined) {
      const message = `${field} must not contain unpaired UTF-16 surrogates`;
      return refuse(req, res, new ValidationError(message, [{ field, message }]));
    }
    next();
  });
}
