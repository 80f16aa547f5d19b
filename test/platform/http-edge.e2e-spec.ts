import type { Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { SERVER_TIMEOUTS, type TunableServer } from '../../src/common/http/server-edge.js';
import { type ApiApp, TestEnv } from '../support/test-env.js';

/** The one Content-Type of every problem answer, whoever writes it (RFC 9457; UTF-8 like every JSON answer). */
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';
const SECURITY_HEADERS = [
  'content-security-policy',
  'strict-transport-security',
  'x-frame-options',
  'x-content-type-options',
  'referrer-policy',
  'permissions-policy',
  'cross-origin-resource-policy',
];

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** When the server closed the connection, in ms after the request was written. */
  closedAfterMs: number;
}

/**
 * Writes these exact bytes on a new connection (a list: each part 200 ms after the one before) and reads
 * one answer until the server closes it.
 */
function raw(port: number, bytes: string | string[], timeoutMs = 5_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${timeoutMs} ms; read so far: ${JSON.stringify(answer)}`));
    }, timeoutMs);
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const at = answer.indexOf('\r\n\r\n');
      const lines = answer.slice(0, at).split('\r\n');
      resolve({
        status: Number(lines[0].split(' ')[1]),
        headers: Object.fromEntries(
          lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 2)]),
        ),
        body: answer.slice(at + 4),
        closedAfterMs: Date.now() - started,
      });
    });
    const parts = typeof bytes === 'string' ? [bytes] : bytes;
    parts.forEach((part, i) => setTimeout(() => socket.writable && socket.write(part), i * 200));
  });
}

const listen = async (app: INestApplication): Promise<number> => {
  const server = app.getHttpServer() as Server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

describe('HTTP edge: what Node and Express answer before a route does', () => {
  let env: TestEnv;
  let api: ApiApp;
  let port: number;
  let auth: string;
  let normal: Record<string, string>;

  beforeAll(async () => {
    env = await TestEnv.create();
    api = await env.startApi();
    port = await listen(api.app);
    auth = await api.bearer('user_edge', 'edge@example.com');
    normal = (await api.http.get('/api/v1/me').set('Authorization', auth)).headers as Record<string, string>;
  });
  afterAll(() => env.close());

  const expectProblem = (
    label: string,
    answer: { status: number; headers: Record<string, unknown>; body?: unknown; text?: string },
    status: number,
    code: string,
  ) => {
    const text = answer.text ?? (typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
    const problem = JSON.parse(text) as Record<string, unknown>;
    expect({
      label,
      status: answer.status,
      type: answer.headers['content-type'],
      code: problem.code,
    }).toEqual({
      label,
      status,
      type: PROBLEM_TYPE,
      code,
    });
    expect(problem).toMatchObject({ status, type: `urn:problem:${code}` });
    expect(problem.request_id).toBe(answer.headers['x-request-id']);
    for (const name of SECURITY_HEADERS) {
      expect({ label, name, value: answer.headers[name] }).toEqual({ label, name, value: normal[name] });
    }
    return problem;
  };

  describe('conditional requests change nothing (ETags are off, answers are no-store)', () => {
    const conditional = [
      { 'If-None-Match': '*' },
      { 'If-None-Match': '*', 'If-Modified-Since': new Date(Date.now() + 86_400_000).toUTCString() },
      { 'If-Modified-Since': new Date(Date.now() + 86_400_000).toUTCString() },
      { 'If-None-Match': 'W/"x", *' },
    ];

    it.each(['/api/v1/me', '/status', '/health/ready', '/health', '/api/v1/credits'])(
      'answers GET and HEAD %s in full whatever the conditional headers',
      async (path) => {
        for (const headers of conditional) {
          const get = await api.http.get(path).set('Authorization', auth).set(headers);
          expect({ path, headers, status: get.status }).toEqual({ path, headers, status: 200 });
          expect(get.text.length).toBeGreaterThan(2);
          const head = await api.http.head(path).set('Authorization', auth).set(headers);
          expect({ path, headers, status: head.status }).toEqual({ path, headers, status: 200 });
        }
        // The liveness fast path and the routed /health (an Origin header) alike.
        const routed = await api.http.get(path).set({ Origin: 'https://x.example', 'If-None-Match': '*' });
        expect(routed.status).not.toBe(304);
      },
    );
  });

  describe('bodies: JSON on JSON routes, forms only where a form is documented', () => {
    const snapshot = async () => ({
      workspaces: await api.prisma.workspace.count(),
      feedback: await api.prisma.feedback.count(),
      keys: await api.prisma.apiKey.count(),
      me: await api.prisma.user.findUniqueOrThrow({ where: { identityUserId: 'user_edge' } }),
    });

    it('refuses a body that is not JSON on a JSON route with 415, changing nothing', async () => {
      const before = await snapshot();
      const cases: [string, string, string, string | undefined, string][] = [
        ['post', '/api/v1/workspaces', 'form', 'application/x-www-form-urlencoded', 'name=x'],
        ['post', '/api/v1/feedback', 'form', 'application/x-www-form-urlencoded', 'message=hello+there'],
        ['post', '/api/v1/api_keys', 'form', 'application/x-www-form-urlencoded', 'name=k'],
        ['patch', '/api/v1/me', 'text/plain', 'text/plain', '{"locale":"fr"}'],
        ['patch', '/api/v1/me', 'text/plain; charset=utf-8', 'text/plain; charset=utf-8', '{"locale":"fr"}'],
        ['patch', '/api/v1/me', 'no Content-Type', undefined, '{"locale":"fr"}'],
        [
          'post',
          '/api/v1/workspaces',
          'multipart',
          'multipart/form-data; boundary=b',
          '--b\r\n\r\nx\r\n--b--',
        ],
        ['post', '/api/v1/workspaces', 'a +json type', 'application/merge-patch+json', '{"name":"x"}'],
      ];
      for (const [method, path, label, type, body] of cases) {
        const headers = [`Authorization: ${auth}`, `Content-Length: ${Buffer.byteLength(body)}`];
        if (type !== undefined) headers.push(`Content-Type: ${type}`);
        const answer = await raw(
          port,
          `${method.toUpperCase()} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headers.join('\r\n')}\r\n\r\n${body}`,
        );
        const problem = expectProblem(`${method} ${path} ${label}`, answer, 415, 'unsupported_media_type');
        expect(problem.detail).toContain('application/json');
      }
      // Chunked, no length announced: refused the same way.
      const chunked = await raw(
        port,
        `PATCH /api/v1/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: ${auth}\r\n` +
          'Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n{"locale":"fr"}\r\n0\r\n\r\n',
      );
      expectProblem('chunked text/plain', chunked, 415, 'unsupported_media_type');
      // Chunked without any Content-Type: refused once its first chunk shows it is not empty, whether
      // the chunk comes with the headers or after them; a JSON request pipelined behind it never runs.
      const head =
        `PATCH /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n` +
        'Transfer-Encoding: chunked\r\n\r\n';
      const feedback = JSON.stringify({ message: 'pipelined behind a refused body' });
      const pipelined =
        `POST /api/v1/feedback HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${feedback.length}\r\n\r\n${feedback}`;
      for (const [label, parts] of [
        ['chunked, no Content-Type', [`${head}f\r\n{"locale":"fr"}\r\n0\r\n\r\n`]],
        [
          'chunked, no Content-Type, a request behind',
          [`${head}f\r\n{"locale":"fr"}\r\n0\r\n\r\n${pipelined}`],
        ],
        ['chunked, no Content-Type, the chunk later', [head, 'f\r\n{"locale":"fr"}\r\n', '0\r\n\r\n']],
        ['chunked, no Content-Type, one byte', [head, '1\r\n \r\n0\r\n\r\n']],
      ] as const) {
        const answer = await raw(port, [...parts]);
        const problem = expectProblem(label, answer, 415, 'unsupported_media_type');
        expect(problem.detail).toContain('application/json');
        expect({ label, connection: answer.headers.connection }).toEqual({ label, connection: 'close' });
        expect(answer.body).not.toMatch(/HTTP\/1\.1 \d{3}/);
      }
      // A pipelined request that ran would still be authenticating when its connection closed.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await snapshot()).toEqual(before);
    });

    it('lets an empty chunked body without Content-Type through (proxies re-framing HTTP/2 send one)', async () => {
      const head = (method: string, path: string) =>
        `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: ${auth}\r\n` +
        'Transfer-Encoding: chunked\r\n\r\n';
      // Its end may come with the headers or after them: the route waits for it.
      for (const [label, parts] of [
        ['restore, one write', [`${head('POST', '/api/v1/account/me/restore')}0\r\n\r\n`]],
        ['restore, the end later', [head('POST', '/api/v1/account/me/restore'), '0\r\n\r\n']],
      ] as const) {
        const answer = await raw(port, [...parts]);
        expect({ label, status: answer.status, body: answer.body }).not.toMatchObject({ status: 415 });
        expect(answer.body).not.toContain('unsupported_media_type');
        expect({ label, status: answer.status < 500 }).toEqual({ label, status: true });
      }
      // A route that answers 200 to an empty body runs as with no body at all.
      const patched = await raw(port, [head('PATCH', '/api/v1/me'), '0\r\n\r\n']);
      expect(patched.status).toBe(200);
      expect(JSON.parse(patched.body)).toMatchObject({ identity_user_id: 'user_edge' });
    });

    it('closes the connection after refusing a body it did not read, instead of draining the upload', async () => {
      // Only the start of a big upload is sent: the refusal must not wait for (or read) the rest.
      const start = (type: string, length: number) =>
        `POST /api/v1/feedback HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: ${type}\r\n` +
        `Content-Length: ${length}\r\n\r\n{"message":"`;
      // A chunk of 1 MB announced, its first bytes sent: the first chunk decides, the rest is never read.
      const chunked =
        `POST /api/v1/feedback HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n100000\r\n{"message":"`;
      for (const [label, bytes, status, code] of [
        ['415 text/plain', start('text/plain', 500_000), 415, 'unsupported_media_type'],
        ['415 chunked without Content-Type', chunked, 415, 'unsupported_media_type'],
        ['413 over the limit', start('application/json', 50_000_000), 413, 'payload_too_large'],
      ] as const) {
        const answer = await raw(port, bytes, 3_000);
        expectProblem(label, answer, status, code);
        expect({ label, connection: answer.headers.connection }).toEqual({ label, connection: 'close' });
        expect(answer.closedAfterMs).toBeLessThan(2_000);
      }
    });

    it('still serves JSON, empty bodies of any type, and the routes that document a form', async () => {
      const json = await api.http
        .patch('/api/v1/me')
        .set('Authorization', auth)
        .set('Content-Type', 'application/json; charset=utf-8')
        .send('{"locale":"fr"}');
      expect({ status: json.status, locale: json.body.locale }).toEqual({ status: 200, locale: 'fr' });
      // A Content-Type without a body (some clients always send one) is no body to refuse.
      const empty = await api.http
        .get('/api/v1/me')
        .set('Authorization', auth)
        .set('Content-Type', 'text/plain');
      expect(empty.status).toBe(200);
      const emptyPost = await api.http
        .post('/api/v1/account/me/restore')
        .set('Authorization', auth)
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .send('');
      expect(emptyPost.status).not.toBe(415);
      // RFC 8058 one-click and the double opt-in's page POST forms (or multipart): never a 415.
      for (const path of ['/api/v1/email/unsubscribe?t=x', '/api/v1/email/confirm?t=x']) {
        for (const type of [
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=b',
          'text/plain',
        ]) {
          const res = await api.http.post(path).set('Content-Type', type).send('List-Unsubscribe=One-Click');
          expect({ path, type, status: res.status }).toEqual({ path, type, status: 400 });
          expect(res.body.code).not.toBe('unsupported_media_type');
        }
      }
    });
  });

  describe("body refusals answer fixed words, never the client's bytes", () => {
    it('does not quote a malformed JSON body or an unknown Content-Encoding', async () => {
      const bodies = [
        '{"locale": <script>alert(1)</script>}',
        '{"locale": "x", "secret_token_abc123": nope}',
        '{"a":1}garbage',
        'sk_live_SECRET',
      ];
      for (const body of bodies) {
        const res = await api.http
          .patch('/api/v1/me')
          .set('Authorization', auth)
          .set('Content-Type', 'application/json')
          .send(body);
        const problem = expectProblem(body, res, 400, 'bad_request');
        expect({ body, detail: problem.detail }).toEqual({
          body,
          detail: 'The request body is not valid JSON.',
        });
        for (const word of ['script', 'secret_token', 'garbage', 'sk_live', 'nope'])
          expect(res.text).not.toContain(word);
      }
      const encoded = await api.http
        .patch('/api/v1/me')
        .set('Authorization', auth)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', '<b>zz</b>')
        .send('{"locale":"fr"}');
      expectProblem('Content-Encoding', encoded, 415, 'unsupported_media_type');
      expect(encoded.text).not.toContain('zz');
      expect(encoded.text).not.toContain('<b>');
    });
  });

  describe('path escapes', () => {
    it.each([
      '/api/v1/saved_searches/%ff',
      '/api/v1/saved_searches/%zz',
      '/api/v1/saved_searches/%c3%28',
      '/api/v1/%ff',
      '/api/v1/%ff/x',
      '/nowhere/%ff',
    ])('answers %s with a 400 that does not echo the path', async (path) => {
      const res = await api.http.get(path).set('Authorization', auth);
      const problem = expectProblem(path, res, 400, 'validation_failed');
      expect(problem.detail).toBe(
        'The request path is not valid: a percent-escape in it is malformed or does not encode UTF-8 text.',
      );
      const escaped = path.split('/').find((segment) => segment.includes('%'))!;
      expect(res.text.toLowerCase()).not.toContain(escaped.toLowerCase());
    });
  });

  describe('the probes read neither their query string nor a body', () => {
    it.each(['/health', '/health/ready', '/status'])('%s answers 200', async (path) => {
      for (const query of ['?x=%ff', '?%C3%28', '?a=%zz&b=%ED%A0%80']) {
        const res = await api.http.get(`${path}${query}`);
        expect({ path, query, status: res.status }).toEqual({ path, query, status: 200 });
      }
      for (const [type, body] of [
        ['application/json', '{bad'],
        ['application/json; charset=latin1', '{}'],
        ['text/plain', 'hello'],
        ['application/x-www-form-urlencoded', 'a=%ff'],
      ]) {
        const res = await api.http.get(path).set('Content-Type', type).send(body);
        expect({ path, type, status: res.status }).toEqual({ path, type, status: 200 });
      }
    });

    it('keeps refusing a bad query or JSON body on the API routes', async () => {
      const query = await api.http.get('/api/v1/me?x=%ff').set('Authorization', auth);
      expectProblem('query', query, 400, 'validation_failed');
      const body = await api.http
        .get('/api/v1/me')
        .set('Authorization', auth)
        .set('Content-Type', 'application/json')
        .send('{bad');
      expectProblem('body', body, 400, 'bad_request');
    });
  });

  describe("Node's own refusals are problem+json", () => {
    it('answers an expectation it cannot meet with 417 problem+json', async () => {
      const answer = await raw(port, 'GET /api/v1/me HTTP/1.1\r\nHost: x\r\nExpect: garbage\r\n\r\n');
      expectProblem('Expect: garbage', answer, 417, 'expectation_failed');
      // 100-continue is still honoured: the interim answer, then the route's.
      const cont = await raw(
        port,
        'POST /api/v1/nope HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n' +
          'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}',
      );
      expect(cont.status).toBe(100);
      expect(cont.body).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    });

    it('answers an HTTP/1.1 request without Host with 400 problem+json; HTTP/1.0 needs none', async () => {
      const answer = await raw(port, 'GET /api/v1/me HTTP/1.1\r\n\r\n');
      const problem = expectProblem('no Host', answer, 400, 'bad_request');
      expect(problem.detail).toContain('Host');
      expect(answer.headers.connection).toBe('close');
      const old = await raw(port, 'GET /health HTTP/1.0\r\n\r\n');
      expect(old.status).toBe(200);
    });

    it('runs nothing sent after a 417 or a missing Host on that connection', async () => {
      const before = await api.prisma.feedback.count();
      const body = JSON.stringify({ message: 'never stored' });
      const post = (extra: string) =>
        `POST /api/v1/feedback HTTP/1.1\r\n${extra}Authorization: ${auth}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      for (const [label, first] of [
        ['417', post('Host: x\r\nExpect: garbage\r\n')],
        ['no Host', post('')],
      ] as const) {
        // The refused request carries a body, and a valid request follows it on the same connection.
        const answer = await raw(port, first + post('Host: x\r\n'));
        expect({ label, status: answer.status, connection: answer.headers.connection }).toEqual({
          label,
          status: label === '417' ? 417 : 400,
          connection: 'close',
        });
        expect(answer.body).not.toMatch(/HTTP\/1\.1 \d{3}/);
      }
      // A pipelined request that ran would still be authenticating when its connection closed.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await api.prisma.feedback.count()).toBe(before);
    });

    it('answers every parser refusal with the same Content-Type', async () => {
      const answer = await raw(port, 'GARBAGE / HTTP/1.1\r\n\r\n');
      expect(answer.headers['content-type']).toBe(PROBLEM_TYPE);
      const routed = await api.http.get('/api/v1/nope');
      expect(routed.headers['content-type']).toBe(PROBLEM_TYPE);
      const parsed = await api.http
        .post('/api/v1/feedback')
        .set('Content-Type', 'application/json')
        .send('{');
      expect(parsed.headers['content-type']).toBe(PROBLEM_TYPE);
      const guarded = await api.http.get('/api/v1/me');
      expect(guarded.headers['content-type']).toBe(PROBLEM_TYPE);
    });

    it('bounds how long a request may take to arrive', () => {
      const server = api.app.getHttpServer() as TunableServer;
      expect({
        headersTimeout: server.headersTimeout,
        requestTimeout: server.requestTimeout,
        keepAliveTimeout: server.keepAliveTimeout,
        connectionsCheckingInterval: server.connectionsCheckingInterval,
      }).toEqual({
        headersTimeout: SERVER_TIMEOUTS.headersMs,
        // The default largest body (1 MB) at the slowest upload a client is granted (96 kbit/s): ~87 s.
        requestTimeout: Math.ceil((1024 * 1024 * 1000) / SERVER_TIMEOUTS.minUploadBytesPerSecond),
        // Longer than the 60 s idle timeout of the usual proxies (AWS ALB, nginx), so they close first.
        keepAliveTimeout: 65_000,
        connectionsCheckingInterval: SERVER_TIMEOUTS.checkIntervalMs,
      });
      expect(SERVER_TIMEOUTS.headersMs).toBeLessThanOrEqual(20_000);
      expect(server.requestTimeout).toBeGreaterThan(84_000);
      expect(server.requestTimeout).toBeLessThanOrEqual(90_000);
    });

    it('keeps idle connections as long as configured and lets the largest body arrive in time', async () => {
      // Google Cloud's load balancers keep idle backend connections 600 s, unchangeable: the backend
      // must keep them longer. A raised large-body limit takes longer to arrive.
      const config = env.configWith({ KEEP_ALIVE_TIMEOUT_MS: '620000', BODY_LIMIT_LARGE_KB: '4096' });
      const tuned = await env.startApi({ config });
      const worker = await env.startWorker({ config });
      for (const app of [tuned.app, worker]) {
        const server = app.getHttpServer() as TunableServer;
        expect({ keepAlive: server.keepAliveTimeout, request: server.requestTimeout }).toEqual({
          keepAlive: 620_000,
          request: Math.ceil((4096 * 1024 * 1000) / SERVER_TIMEOUTS.minUploadBytesPerSecond),
        });
        expect(server.headersTimeout).toBe(SERVER_TIMEOUTS.headersMs);
      }
      // A small large-body limit keeps the 60 s floor.
      const small = await env.startApi({ config: env.configWith({ BODY_LIMIT_LARGE_KB: '64' }) });
      expect((small.app.getHttpServer() as TunableServer).requestTimeout).toBe(60_000);
    });

    it('answers headers or a body that never finish with 408 problem+json and closes', async () => {
      // The same app with the timeouts shortened, so the test does not wait 20 s.
      const slow = await env.startApi();
      const server = slow.app.getHttpServer() as TunableServer;
      server.headersTimeout = 400;
      server.requestTimeout = 800;
      server.connectionsCheckingInterval = 100;
      const slowPort = await listen(slow.app);
      const [headers, body] = await Promise.all([
        raw(slowPort, 'GET /api/v1/me HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n'),
        raw(
          slowPort,
          'POST /api/v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
            'Content-Length: 1000\r\n\r\n{"message":',
        ),
      ]);
      for (const [label, answer] of [
        ['headers', headers],
        ['body', body],
      ] as const) {
        expectProblem(label, answer, 408, 'request_timeout');
        expect(answer.closedAfterMs).toBeLessThan(3_000);
      }
      expect((await slow.http.get('/status')).status).toBe(200);
    });

    it('never runs the route of a request it answered 408, even when the rest arrives later', async () => {
      const slow = await env.startApi();
      const server = slow.app.getHttpServer() as TunableServer;
      server.headersTimeout = 400;
      server.requestTimeout = 800;
      server.connectionsCheckingInterval = 100;
      const slowPort = await listen(slow.app);
      const slowAuth = await slow.bearer('user_slow', 'slow@example.com');
      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const body = JSON.stringify({ message: 'sent after the 408' });
      // An authenticated, valid request: only the timeout stands between it and a new row.
      const late = async (first: string, rest: string): Promise<string> => {
        const socket = connect({ port: slowPort, host: '127.0.0.1', allowHalfOpen: true });
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('error', () => undefined);
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write(first);
        await sleep(1_500);
        // The client keeps sending (it has not read the 408 yet): the request completes on the wire.
        for (const chunk of rest.match(/.{1,8}/gs) ?? []) {
          if (socket.destroyed) break;
          socket.write(chunk);
          await sleep(20);
        }
        await sleep(500);
        socket.destroy();
        return answer;
      };
      const head = `POST /api/v1/feedback HTTP/1.1\r\nHost: x\r\nAuthorization: ${slowAuth}\r\n`;
      const framing = `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
      const answers = await Promise.all([
        late(`${head}${framing}${body.slice(0, 5)}`, body.slice(5)),
        late(head, `${framing}${body}`),
      ]);
      for (const answer of answers) {
        expect(answer.startsWith('HTTP/1.1 408 ')).toBe(true);
        expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
      }
      expect(await slow.prisma.feedback.count()).toBe(0);
    });

    it('drops a connection it answered 408 even when the client keeps its side open', async () => {
      const slow = await env.startApi();
      const server = slow.app.getHttpServer() as TunableServer;
      server.headersTimeout = 400;
      server.requestTimeout = 800;
      server.connectionsCheckingInterval = 100;
      const slowPort = await listen(slow.app);
      const sockets = await Promise.all(
        Array.from({ length: 5 }, async () => {
          const socket = connect({ port: slowPort, host: '127.0.0.1', allowHalfOpen: true });
          socket.on('error', () => undefined);
          socket.on('data', () => undefined);
          await new Promise((resolve) => socket.once('connect', resolve));
          socket.write(
            'POST /webhooks/billing HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
              'Content-Length: 100000\r\n\r\n{',
          );
          return socket;
        }),
      );
      const connections = () =>
        new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
      const started = Date.now();
      while ((await connections()) > 0 && Date.now() - started < 4_000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await connections()).toBe(0);
      sockets.forEach((socket) => socket.destroy());
    });
  });

  describe('the worker answers like the API', () => {
    let worker: INestApplication;

    beforeAll(async () => {
      worker = await env.startWorker();
    });

    it('answers unknown paths and bad escapes with problem+json that does not echo them', async () => {
      const http = request(worker.getHttpServer());
      const unknown = await http.get('/x-unknown-path');
      expect({ status: unknown.status, type: unknown.headers['content-type'] }).toEqual({
        status: 404,
        type: PROBLEM_TYPE,
      });
      expect(unknown.text).not.toContain('x-unknown-path');
      expect(unknown.body).toMatchObject({ code: 'not_found', request_id: unknown.headers['x-request-id'] });
      const escape = await http.get('/health/%ff');
      expect({ status: escape.status, type: escape.headers['content-type'], code: escape.body.code }).toEqual(
        {
          status: 400,
          type: PROBLEM_TYPE,
          code: 'validation_failed',
        },
      );
      expect(escape.text.toLowerCase()).not.toContain('%ff');
    });

    it('serves its probes whatever the query, body or conditional headers', async () => {
      const http = request(worker.getHttpServer());
      for (const path of ['/health', '/health/ready', '/status']) {
        const res = await http
          .get(`${path}?x=%ff`)
          .set('If-None-Match', '*')
          .set('Content-Type', 'application/json')
          .send('{bad');
        expect({ path, status: res.status }).toEqual({ path, status: 200 });
        expect(res.text.length).toBeGreaterThan(2);
      }
      expect((await http.get('/metrics')).status).toBe(200);
    });

    it('answers Node-level refusals with problem+json too', async () => {
      const workerPort = await listen(worker);
      const expectation = await raw(workerPort, 'GET /health HTTP/1.1\r\nHost: x\r\nExpect: garbage\r\n\r\n');
      expect({ status: expectation.status, type: expectation.headers['content-type'] }).toEqual({
        status: 417,
        type: PROBLEM_TYPE,
      });
      const garbage = await raw(workerPort, 'GARBAGE / HTTP/1.1\r\n\r\n');
      expect({ status: garbage.status, type: garbage.headers['content-type'] }).toEqual({
        status: 400,
        type: PROBLEM_TYPE,
      });
      const server = worker.getHttpServer() as Server;
      expect(server.headersTimeout).toBe(SERVER_TIMEOUTS.headersMs);
    });
  });
});
