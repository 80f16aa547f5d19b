import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: unknown;
}

interface FakeSubscription {
  id: string;
  status: 'active' | 'trialing' | 'past_due' | 'paused' | 'canceled';
  scheduled_change: { action: string; effective_at: string; resume_at: string | null } | null;
  items: { price: { id: string }; quantity: number }[];
}

interface Failure {
  status: number;
  remaining: number;
  headers: Record<string, string>;
  body?: string;
}

/**
 * A local stand-in for the billing provider's REST API (Paddle-shaped): cancel, update items, resume
 * and read a subscription. Records every request; can be told to fail N times (or always) with a
 * status and headers, or to answer with a body that breaks the contract.
 */
export class FakeBillingApi {
  readonly requests: RecordedRequest[] = [];
  /**
   * The provider's event log (Paddle `GET /events`): every event it sent or should have sent, oldest first,
   * whether or not its webhook was ever delivered.
   */
  readonly events: { event_id: string; event_type: string; occurred_at: string; data: unknown }[] = [];
  readonly subscriptions = new Map<string, FakeSubscription>();
  private failures: Failure[] = [];
  private held: { arrived: () => void; released: Promise<void> } | null = null;
  private server!: Server;
  url = '';

  static async start(): Promise<FakeBillingApi> {
    const fake = new FakeBillingApi();
    fake.server = createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  /** The next `times` requests answer `status` (use Infinity for always). */
  failNext(status: number, times = 1, headers: Record<string, string> = {}, body?: string): void {
    this.failures.push({ status, remaining: times, headers, body });
  }

  /**
   * The next `GET /events` is answered only after `release()`; `reached` resolves when it has arrived (a
   * backfill run is then inside its first page). Lets a test act while a run is in progress, without sleeps.
   */
  holdNextEventPage(): { reached: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.held = { arrived, released };
    return { reached, release };
  }

  reset(): void {
    this.requests.length = 0;
    this.failures = [];
  }

  /** The provider's whole subscription entity (the drift check reads it back). */
  seedEntity(entity: { id: string } & Record<string, unknown>): void {
    this.subscriptions.set(entity.id, { scheduled_change: null, ...entity } as unknown as FakeSubscription);
  }

  seed(id: string, status: FakeSubscription['status'] = 'active', priceId = 'pri_pro'): void {
    this.subscriptions.set(id, {
      id,
      status,
      scheduled_change: null,
      items: [{ price: { id: priceId }, quantity: 1 }],
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    this.requests.push({
      method: req.method ?? 'GET',
      path,
      authorization: req.headers.authorization,
      body: text ? JSON.parse(text) : null,
    });

    const failure = this.failures[0];
    if (failure) {
      failure.remaining -= 1;
      if (failure.remaining <= 0) this.failures.shift();
      res.writeHead(failure.status, { 'content-type': 'application/json', ...failure.headers });
      res.end(failure.body ?? JSON.stringify({ error: { type: 'api_error', code: 'fake_failure' } }));
      return;
    }

    if (req.method === 'GET' && path.startsWith('/events')) {
      const held = this.held;
      this.held = null;
      if (held) {
        held.arrived();
        await held.released;
      }
      return this.eventLog(res, path);
    }

    const match = /^\/subscriptions\/([^/]+)(\/(cancel|resume))?$/.exec(path);
    const sub = match ? this.subscriptions.get(decodeURIComponent(match[1])) : undefined;
    if (!match || !sub) return this.send(res, 404, { error: { type: 'request_error', code: 'not_found' } });
    const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
    const action = match[3];
    const periodEnd = new Date(Date.now() + 30 * 86_400_000).toISOString();

    if (req.method === 'GET' && !action) return this.send(res, 200, { data: sub });
    if (req.method === 'POST' && action === 'cancel') {
      if (sub.status === 'canceled') {
        return this.send(res, 400, {
          error: { type: 'request_error', code: 'subscription_update_when_canceled' },
        });
      }
      // Like the provider: a paused subscription (no billing period) can only be canceled immediately;
      // so, here, can a past_due one (no scheduled changes while a payment is past due).
      if ((sub.status === 'paused' || sub.status === 'past_due') && body.effective_from !== 'immediately') {
        return this.send(res, 400, {
          error: { type: 'request_error', code: 'subscription_cancel_must_be_immediate' },
        });
      }
      // Like the provider: no second scheduled change while one is pending (Paddle's documented error
      // `subscription_locked_pending_changes`, developer.paddle.com/errors/subscriptions).
      if (body.effective_from !== 'immediately' && sub.scheduled_change) {
        return this.send(res, 400, {
          error: {
            type: 'request_error',
            code: 'subscription_locked_pending_changes',
            detail: 'cannot update subscription, pending scheduled changes',
          },
        });
      }
      if (body.effective_from === 'immediately') {
        sub.status = 'canceled';
        sub.scheduled_change = null;
      } else {
        sub.scheduled_change = { action: 'cancel', effective_at: periodEnd, resume_at: null };
      }
      return this.send(res, 200, { data: sub });
    }
    if (req.method === 'POST' && action === 'resume') {
      sub.status = 'active';
      sub.scheduled_change = null;
      return this.send(res, 200, { data: sub });
    }
    if (req.method === 'PATCH' && !action) {
      // Like the provider: no changes while a payment is past due; only items (no proration mode) while paused.
      if (sub.status === 'past_due') {
        return this.send(res, 400, {
          error: { type: 'request_error', code: 'subscription_locked_past_due' },
        });
      }
      if (sub.status === 'paused' && Object.keys(body).some((key) => key !== 'items')) {
        return this.send(res, 400, {
          error: { type: 'request_error', code: 'subscription_only_update_items_on_paused_subscription' },
        });
      }
      const items = body.items as { price_id: string; quantity: number }[];
      sub.items = items.map((item) => ({ price: { id: item.price_id }, quantity: item.quantity }));
      return this.send(res, 200, { data: sub });
    }
    this.send(res, 405, { error: { type: 'request_error', code: 'method_not_allowed' } });
  }

  /** Paddle's list of events: `after` an event id (exclusive), `per_page` (max 200), oldest first. */
  private eventLog(res: ServerResponse, path: string): void {
    const query = new URL(path, 'http://fake').searchParams;
    const perPage = Math.min(Number(query.get('per_page') ?? 50), 200);
    const after = query.get('after');
    const start = after ? this.events.findIndex((e) => e.event_id === after) + 1 : 0;
    const page = this.events.slice(start, start + perPage);
    const last = page[page.length - 1];
    const hasMore = start + perPage < this.events.length;
    this.send(res, 200, {
      data: page,
      meta: {
        request_id: `req_${start}`,
        pagination: {
          per_page: perPage,
          next: `${this.url}/events?after=${last?.event_id ?? after ?? ''}&per_page=${perPage}`,
          has_more: hasMore,
          estimated_total: this.events.length,
        },
      },
    });
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
