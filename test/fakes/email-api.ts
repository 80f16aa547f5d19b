import { createHash, randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
  type Server,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  /** Date.now() when the request arrived. */
  at: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
  status: number | 'hung';
}

export interface Delivery {
  id: string;
  to: string;
  from: string;
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
  tags: { name: string; value: string }[];
  idempotencyKey: string | null;
  at: number;
}

interface ResendMessage {
  from?: unknown;
  to?: unknown;
  subject?: unknown;
  html?: unknown;
  text?: unknown;
  headers?: Record<string, string>;
  tags?: { name: string; value: string }[];
}

/**
 * A local e-mail provider speaking the Resend shape: `POST /emails` -> `{id}`, `POST /emails/batch`
 * (<= 100, all or nothing) -> `{data: [{id}]}`, Bearer auth, Idempotency-Key replays (same key + same
 * body = same answer, nothing delivered again; same key + other body = 409 `invalid_idempotent_request`,
 * as Resend answers for 24 h after a key was used). It records every request
 * with its arrival time and every delivered message, and can misbehave on demand.
 */
export class FakeEmailApi {
  readonly requests: FakeRequest[] = [];
  readonly deliveries: Delivery[] = [];
  apiKey = 'test-email-api-key';
  url = '';
  /** Headers added to every answer (e.g. ratelimit-remaining / ratelimit-reset). */
  extraHeaders: Record<string, string> = {};

  private server!: Server;
  private failures: { status: number; headers: Record<string, string>; name: string }[] = [];
  private rejected = new Map<string, number>();
  private outages = new Map<string, number>();
  private hangAfterCount: number | null = null;
  private readonly hung: ServerResponse[] = [];
  private holding = false;
  private readonly held: (() => void)[] = [];
  private readonly replays = new Map<string, { bodyHash: string; status: number; answer: unknown }>();
  private readonly recorded = new Map<string, unknown[]>();

  static async start(): Promise<FakeEmailApi> {
    const fake = new FakeEmailApi();
    fake.server = createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  /**
   * The next `count` requests fail with `status` (default 503, `Retry-After: 0` so tests stay fast) and
   * error `name` (Resend's: e.g. `concurrent_idempotent_requests` for a 409 while a key is in progress).
   */
  failNext(
    count: number,
    status = 503,
    headers: Record<string, string> = { 'retry-after': '0' },
    name = 'application_error',
  ): void {
    for (let i = 0; i < count; i += 1) this.failures.push({ status, headers, name });
  }

  /**
   * Requests carrying this address (and no refused one) fail with `status` until restoreAddress: an
   * outage that hits some messages, after validation and before anything is delivered.
   */
  failAddress(address: string, status = 503): void {
    this.outages.set(address.toLowerCase(), status);
  }

  restoreAddress(address: string): void {
    this.outages.delete(address.toLowerCase());
  }

  /** Any request carrying this address is refused with `status` (422: Resend's validation error). */
  rejectAddress(address: string, status = 422): void {
    this.rejected.set(address.toLowerCase(), status);
  }

  /**
   * After `count` more answered requests, the provider takes requests (and delivers them) but never
   * answers: the connection hangs, as when a worker dies mid-request.
   */
  hangAfter(count: number): void {
    this.hangAfterCount = count;
  }

  /** Answers normally again (requests already hanging stay so until reset or close). */
  stopHanging(): void {
    this.hangAfterCount = null;
  }

  get hungCount(): number {
    return this.hung.length;
  }

  /**
   * A slow provider: requests are taken (and delivered) but their answers wait until releaseHeld(), so a
   * test can act while a send is in flight.
   */
  holdAnswers(): void {
    this.holding = true;
  }

  /** Sends every withheld answer and answers at once again. */
  releaseHeld(): void {
    this.holding = false;
    for (const send of this.held.splice(0)) send();
  }

  get heldCount(): number {
    return this.held.length;
  }

  reset(): void {
    this.requests.length = 0;
    this.deliveries.length = 0;
    this.failures = [];
    this.rejected.clear();
    this.outages.clear();
    this.hangAfterCount = null;
    this.extraHeaders = {};
    this.releaseHung();
    this.holding = false;
    this.held.length = 0;
    this.recorded.clear();
  }

  /**
   * The next successful request to `path` is answered with this exact body, a provider's recorded answer
   * (test/contracts/fixtures/resend); the deliveries it makes take the ids the answer carries.
   */
  replayAnswer(path: '/emails' | '/emails/batch', body: unknown): void {
    const queue = this.recorded.get(path) ?? [];
    queue.push(body);
    this.recorded.set(path, queue);
  }

  /**
   * The provider's idempotency window has passed (Resend keeps a key 24 h): every key it held is
   * forgotten, so a request under one of them is a new request and delivers again.
   */
  expireIdempotencyKeys(): void {
    this.replays.clear();
  }

  /** Deliveries per recipient address. */
  deliveredTo(address: string): Delivery[] {
    return this.deliveries.filter((d) => d.to === address.toLowerCase());
  }

  /** The configuration that points the service at this fake, with the client-side ceiling out of the way. */
  env(): Record<string, string> {
    return {
      EMAIL_PROVIDER: 'resend',
      EMAIL_API_URL: this.url,
      EMAIL_API_KEY: this.apiKey,
      EMAIL_MAX_REQUESTS_PER_SECOND: '1000',
    };
  }

  async close(): Promise<void> {
    this.releaseHung();
    this.held.length = 0;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private releaseHung(): void {
    for (const res of this.hung.splice(0)) res.destroy();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = raw;
    }
    const entry: FakeRequest = {
      at: Date.now(),
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body,
      status: 0,
    };
    this.requests.push(entry);
    const answer = (status: number, json: unknown, headers: Record<string, string> = {}) => {
      entry.status = status;
      res.writeHead(status, { 'content-type': 'application/json', ...this.extraHeaders, ...headers });
      res.end(JSON.stringify(json));
    };

    if (req.method !== 'POST' || (entry.path !== '/emails' && entry.path !== '/emails/batch')) {
      return answer(404, { statusCode: 404, name: 'not_found', message: 'Not found' });
    }
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      return answer(401, { statusCode: 401, name: 'missing_api_key', message: 'Missing API key' });
    }
    const failure = this.failures.shift();
    if (failure)
      return answer(
        failure.status,
        { statusCode: failure.status, name: failure.name, message: 'Try again' },
        failure.headers,
      );

    const batch = entry.path === '/emails/batch';
    const messages = (batch ? body : [body]) as ResendMessage[];
    if (!Array.isArray(messages) || messages.length === 0 || messages.length > 100) {
      return answer(422, {
        statusCode: 422,
        name: 'validation_error',
        message: 'A batch holds 1 to 100 e-mails',
      });
    }
    for (const [index, message] of messages.entries()) {
      const to = Array.isArray(message?.to) ? message.to : [message?.to];
      const invalid =
        typeof message?.from !== 'string' ||
        typeof message?.subject !== 'string' ||
        typeof to[0] !== 'string';
      const rejected = to.map((t) => this.rejected.get(String(t).toLowerCase())).find((s) => s !== undefined);
      if (invalid || rejected) {
        const status = rejected ?? 422;
        return answer(status, {
          statusCode: status,
          name: 'validation_error',
          message: `Email ${index}: invalid recipient`,
        });
      }
    }

    const outage = messages
      .map((message) =>
        this.outages.get(String(Array.isArray(message.to) ? message.to[0] : message.to).toLowerCase()),
      )
      .find((status) => status !== undefined);
    if (outage) {
      return answer(
        outage,
        { statusCode: outage, name: 'application_error', message: 'Try again' },
        { 'retry-after': '0' },
      );
    }

    const key = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : null;
    const bodyHash = createHash('sha256').update(raw).digest('hex');
    if (key) {
      const seen = this.replays.get(`${entry.path} ${key}`);
      if (seen && seen.bodyHash !== bodyHash) {
        return answer(409, {
          statusCode: 409,
          name: 'invalid_idempotent_request',
          message: 'Key reused with another body',
        });
      }
      if (seen) return answer(seen.status, seen.answer);
    }

    const recorded = this.recorded.get(entry.path)?.shift();
    const recordedIds = recordedIdsOf(recorded, batch);
    const ids = messages.map((message, index) => {
      const id = recordedIds[index] ?? randomUUID();
      this.deliveries.push({
        id,
        to: String(Array.isArray(message.to) ? message.to[0] : message.to).toLowerCase(),
        from: String(message.from),
        subject: String(message.subject),
        html: String(message.html ?? ''),
        text: String(message.text ?? ''),
        headers: message.headers ?? {},
        tags: message.tags ?? [],
        idempotencyKey: key,
        at: entry.at,
      });
      return { id };
    });
    const result = recorded ?? (batch ? { data: ids } : ids[0]);
    if (key) this.replays.set(`${entry.path} ${key}`, { bodyHash, status: 200, answer: result });

    if (this.hangAfterCount !== null) {
      if (this.hangAfterCount <= 0) {
        entry.status = 'hung';
        this.hung.push(res);
        return;
      }
      this.hangAfterCount -= 1;
    }
    if (this.holding) {
      this.held.push(() => answer(200, result));
      return;
    }
    answer(200, result);
  }
}

/** The ids a recorded Resend answer carries: `{id}` for one e-mail, `{data: [{id}]}` for a batch. */
function recordedIdsOf(answer: unknown, batch: boolean): string[] {
  if (answer === undefined || answer === null || typeof answer !== 'object') return [];
  const items = batch ? (answer as { data?: unknown }).data : [answer];
  if (!Array.isArray(items)) return [];
  return items.map((item) => String((item as { id?: unknown })?.id ?? ''));
}
