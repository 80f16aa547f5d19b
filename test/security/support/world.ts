import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import type { Type } from '@nestjs/common';
import type { User } from '../../../src/generated/prisma/client.js';
import { HttpClient } from '../../../src/infra/http/http-client.js';
import { FakeBillingApi } from '../../fakes/billing-api.js';
import { FakeEmailApi } from '../../fakes/email-api.js';
import { FakeLlmServer } from '../../fakes/llm-server.js';
import { FakeVectorStore } from '../../fakes/vector-store.js';
import { type ApiApp, TEST_SECRETS, TestEnv } from '../../support/test-env.js';

export const ADMIN_EMAIL = 'admin@example.com';
export const BILLING_API_KEY = 'billing-api-key-for-tests-0123456789';
export const LLM_API_KEY = 'sk-llm-key-for-tests-0123456789';

export interface WorldOptions {
  env?: Record<string, string>;
  logLevel?: string;
  /** Start the worker too (outbox relay, e-mail, hooks). */
  worker?: boolean;
  modules?: Type[];
  /** Claims every token minted by the world carries (when the configuration demands them). */
  claims?: { audience?: string; azp?: string };
}

/**
 * One API (and optionally a worker) with every external provider replaced by a local fake speaking its
 * contract: billing API, e-mail API (Resend-shaped), language model, vector store, identity provider.
 */
export class SecurityWorld {
  private users = 0;
  worker: INestApplication | null = null;

  private constructor(
    readonly env: TestEnv,
    readonly api: ApiApp,
    readonly billing: FakeBillingApi,
    readonly email: FakeEmailApi,
    readonly llm: FakeLlmServer,
    readonly vector: FakeVectorStore,
    private readonly claims: { audience?: string; azp?: string },
  ) {}

  static async start(options: WorldOptions = {}): Promise<SecurityWorld> {
    const [billing, email, llm, vector] = await Promise.all([
      FakeBillingApi.start(),
      FakeEmailApi.start(),
      FakeLlmServer.start(),
      FakeVectorStore.start(),
    ]);
    const env = await TestEnv.create({
      logLevel: options.logLevel,
      env: {
        ADMIN_EMAILS: ADMIN_EMAIL,
        BILLING_API_URL: billing.url,
        BILLING_API_KEY,
        ...email.env(),
        LLM_BASE_URL: llm.baseUrl,
        LLM_API_KEY,
        LLM_MODEL: 'fake-1',
        VECTOR_STORE_URL: vector.url,
        HTTP_MAX_ATTEMPTS: '2',
        ...options.env,
      },
    });
    env.onClose(async () => {
      await Promise.all([billing.close(), email.close(), llm.close(), vector.close()]);
    });
    const api = await env.startApi({ modules: options.modules });
    api.app.get(HttpClient).backoffBaseMs = 1;
    const world = new SecurityWorld(env, api, billing, email, llm, vector, options.claims ?? {});
    if (options.worker) {
      world.worker = await env.startWorker();
      world.worker.get(HttpClient).backoffBaseMs = 1;
    }
    return world;
  }

  /** Where the service is allowed to send requests: the configured providers and stores. */
  get configuredPorts(): number[] {
    const port = (url: string) => Number(new URL(url).port);
    return [
      port(this.env.env.DATABASE_URL),
      port(this.env.env.REDIS_URL),
      port(this.env.idp.jwksUrl),
      port(this.billing.url),
      port(this.email.url),
      port(this.llm.baseUrl),
      port(this.vector.url),
    ];
  }

  /** `Bearer <RS256 token>` from the test identity provider. */
  async bearer(sub: string, email?: string): Promise<string> {
    const { audience, azp } = this.claims;
    return `Bearer ${await this.env.idp.token({ sub, email: email ?? `${sub}@example.com`, azp }, { audience })}`;
  }

  /** A new user created just in time by a real RS256 token; returns the row and the header value. */
  async user(label = 'user', email?: string): Promise<{ user: User; auth: string; sub: string }> {
    this.users += 1;
    const sub = `user_${label}_${this.users}_${randomUUID().slice(0, 6)}`;
    const auth = await this.bearer(sub, email);
    const res = await this.api.http.get('/api/v1/me').set('Authorization', auth);
    if (res.status !== 200) throw new Error(`/me answered ${res.status}`);
    const user = await this.api.prisma.user.findUniqueOrThrow({ where: { identityUserId: sub } });
    return { user, auth, sub };
  }

  /** A fresh admin token (tokens live 60 s; mint one per use in long tests). */
  async admin(sub = 'user_admin'): Promise<string> {
    return this.bearer(sub, ADMIN_EMAIL);
  }

  /** An API key of the user behind `auth`, as `Bearer <secret>`. */
  async apiKey(auth: string, name = 'key'): Promise<{ auth: string; id: string; secret: string }> {
    const res = await this.api.http.post('/api/v1/api_keys').set('Authorization', auth).send({ name });
    if (res.status !== 201) throw new Error(`api key answered ${res.status}: ${res.text}`);
    return { auth: `Bearer ${res.body.secret}`, id: res.body.id, secret: res.body.secret };
  }

  /**
   * Credentials found in the logs this world's processes wrote: the configured secrets, and anything
   * shaped like a bearer token, JWT or signed token, API key or webhook signature.
   */
  leakedSecrets(): string[] {
    const logs = this.env.logs.lines.join('\n');
    const configured = [...Object.values(TEST_SECRETS), BILLING_API_KEY, LLM_API_KEY, this.email.apiKey];
    const shapes = [
      /Bearer\s+[A-Za-z0-9._~+/-]{16,}/,
      /eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/,
      /sk_live_[0-9a-f]{12}_[A-Za-z0-9_-]{16,}/,
      /h1=[0-9a-f]{64}/,
      /v1,[A-Za-z0-9+/=]{20,}/,
    ];
    return [
      ...configured
        .filter((secret) => logs.includes(secret))
        .map((secret) => `configured secret ${secret.slice(0, 8)}…`),
      ...shapes.flatMap((shape) => {
        const found = shape.exec(logs);
        return found ? [`${shape}: ${found[0].slice(0, 40)}`] : [];
      }),
    ];
  }

  /** Closes everything, then fails the file if its logs held a credential (every security file scans). */
  async close(): Promise<void> {
    const leaked = this.leakedSecrets();
    await this.env.close();
    if (leaked.length > 0) throw new Error(`credentials in the service logs: ${leaked.join('; ')}`);
  }
}

/** An archived webhook delivery (SKIPPED, no effect) for the admin webhook routes that name one. */
export function archivedEvent(api: ApiApp) {
  return api.prisma.webhookEvent.create({
    data: {
      provider: 'billing',
      eventId: `evt_security_${randomUUID().replaceAll('-', '')}`,
      eventType: 'customer.created',
      payload: { event_type: 'customer.created', data: {} },
      status: 'SKIPPED',
      error: 'unhandled_event_type',
    },
  });
}
