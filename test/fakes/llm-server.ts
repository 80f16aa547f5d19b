import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LlmRequest {
  authorization: string | undefined;
  body: { model?: string; messages?: { role: string; content: string }[]; max_tokens?: number };
}

export type LlmBehaviour =
  /** 200 with a completion and its usage. */
  | { kind: 'ok'; content?: string; usage?: { prompt_tokens: number; completion_tokens: number } }
  /**
   * Every attempt answers this status, with this body (default: an OpenAI-shaped server error) and
   * these headers (e.g. Retry-After).
   */
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  /** Answers only after `ms` (longer than the client's timeout). */
  | { kind: 'slow'; ms: number }
  /** 200 whose body breaks the contract (no usage). */
  | { kind: 'invalid' }
  /** Holds each request until release() is called, then answers like 'ok'. */
  | { kind: 'held' }
  /** 200 with this exact body: a provider's recorded answer (test/contracts/fixtures/openai). */
  | { kind: 'recorded'; body: unknown }
  /**
   * 200 headers and the first bytes of a completion, then nothing more: `stall` keeps the connection
   * open (longer than the client's timeout), `reset` destroys it mid-body.
   */
  | { kind: 'cut-body'; then: 'stall' | 'reset' };

type Answer =
  { status: number; body: unknown; headers?: Record<string, string> } | { cut: 'stall' | 'reset' };

/**
 * A local OpenAI-compatible chat completions server (`POST /v1/chat/completions`) for tests: records
 * what it received and answers as told (success with usage, an error status, too slow, a broken body,
 * a body cut off after the headers, or held until the test releases it).
 */
export class FakeLlmServer {
  readonly requests: LlmRequest[] = [];
  behaviour: LlmBehaviour = { kind: 'ok' };
  baseUrl = '';
  private server!: Server;
  private held: (() => void)[] = [];
  private heldWaiters: (() => void)[] = [];

  static async start(): Promise<FakeLlmServer> {
    const fake = new FakeLlmServer();
    fake.server = createServer((req, res) => {
      void fake.handle(req).then(
        (answer) => {
          if (res.writableEnded || res.destroyed) return;
          if ('cut' in answer) {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.write('{"id":"chatcmpl-cut","object":"chat.completion","choices":[');
            if (answer.cut === 'reset') setTimeout(() => res.destroy(), 20);
            return;
          }
          res
            .writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
            .end(JSON.stringify(answer.body));
        },
        () => res.destroy(),
      );
    });
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    fake.baseUrl = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}/v1`;
    return fake;
  }

  /** Requests currently held ('held' behaviour). */
  get heldCount(): number {
    return this.held.length;
  }

  /** Resolves once `count` requests are held. */
  async waitForHeld(count = 1): Promise<void> {
    while (this.held.length < count) await new Promise<void>((resolve) => this.heldWaiters.push(resolve));
  }

  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage): Promise<Answer> {
    const raw = await new Promise<string>((resolve, reject) => {
      let data = '';
      req.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
      req.on('end', () => resolve(data));
      req.on('error', reject);
    });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return { status: 404, body: {} };
    const body = JSON.parse(raw) as LlmRequest['body'];
    this.requests.push({ authorization: req.headers.authorization, body });
    const behaviour = this.behaviour;
    switch (behaviour.kind) {
      case 'status':
        return {
          status: behaviour.status,
          body: behaviour.body ?? { error: { message: 'fake failure', type: 'server_error' } },
          headers: behaviour.headers,
        };
      case 'recorded':
        return { status: 200, body: behaviour.body };
      case 'cut-body':
        return { cut: behaviour.then };
      case 'invalid':
        return { status: 200, body: { id: 'chatcmpl-x', choices: [{ message: { content: 'no usage' } }] } };
      case 'slow':
        await new Promise((resolve) => setTimeout(resolve, behaviour.ms));
        return this.success(body);
      case 'held':
        await new Promise<void>((resolve) => {
          this.held.push(resolve);
          for (const wake of this.heldWaiters.splice(0)) wake();
        });
        return this.success(body);
      default:
        return this.success(body, behaviour.content, behaviour.usage);
    }
  }

  private success(
    body: LlmRequest['body'],
    content = 'Hello from the fake model.',
    usage?: { prompt_tokens: number; completion_tokens: number },
  ): { status: number; body: unknown } {
    const promptChars = (body.messages ?? []).reduce((sum, m) => sum + m.content.length, 0);
    return {
      status: 200,
      body: {
        id: `chatcmpl-${this.requests.length}`,
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: usage ?? {
          prompt_tokens: Math.ceil(promptChars / 4) + 5,
          completion_tokens: Math.min(body.max_tokens ?? 16, 12),
        },
      },
    };
  }
}
