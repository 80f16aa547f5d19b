import type { ProjectConfig } from './project.config.js';

export type AppEnv = 'development' | 'test' | 'staging' | 'production';

/**
 * The validated configuration, parsed once at boot (env.ts). A class so that Nest can inject it by type;
 * its instances are plain objects built by loadConfig.
 */
export abstract class AppConfig {
  declare env: AppEnv;
  /** staging and production */
  declare deployed: boolean;
  declare port: number;
  declare workerPort: number;
  /** Prometheus endpoint of the API process; 0 disables it. Never served on the public port. */
  declare metricsPort: number;
  declare logLevel: string;
  declare project: ProjectConfig;
  declare corsOrigins: string[];
  declare database: { url: string; poolSize: number; statementTimeoutMs: number };
  declare redis: { url: string; keyPrefix: string };
  declare vectorStoreUrl: string | null;
  declare identity: {
    jwksUrl: string | null;
    issuer: string | null;
    audience: string | null;
    authorizedParties: string[];
    /** IDENTITY_ALLOW_ANY_AUDIENCE=true: a deployed boot without an aud/azp check is intended. */
    allowAnyAudience: boolean;
    webhookSecret: string | null;
    /** Still accepted during a rotation (never used to sign). */
    previousWebhookSecret: string | null;
    /** Tokens are refused once this many seconds passed since their `iat`, whatever their `exp`. */
    maxTokenAgeSeconds: number;
  };
  declare billing: {
    webhookSecret: string | null;
    /** Still accepted during a rotation (webhooks and checkout tokens; never used to sign). */
    previousWebhookSecret: string | null;
    /** null only when deployed without BILLING_API_URL, which the boot refuses. */
    apiUrl: string | null;
    apiKey: string | null;
    checkoutTokenTtlSeconds: number;
    /** The backfill from the provider's event log runs when BILLING_API_URL and BILLING_API_KEY are set. */
    backfillEnabled: boolean;
    backfillIntervalMinutes: number;
    /** The event id the first backfill run starts after (null: the oldest event the provider keeps). */
    backfillSince: string | null;
    /** The drift check asks the provider about an ACTIVE/TRIALING subscription this long after its period end. */
    driftGraceMinutes: number;
  };
  declare email: {
    provider: 'console' | 'resend';
    apiUrl: string;
    apiKey: string | null;
    from: string;
    unsubscribeSecret: string | null;
    /** Tokens in mail sent before a rotation keep working with it; never used to sign. */
    previousUnsubscribeSecret: string | null;
    publicBaseUrl: string;
    /** Client-side ceiling on provider requests per second, shared by all workers through Redis. */
    maxRequestsPerSecond: number;
    /** Retries of one provider request after its first attempt (spec: "e-mail send retries: 3"). */
    sendRetries: number;
    /** Where the daily refresh downloads the disposable-domain list; null: the shipped list only. */
    disposableListUrl: string | null;
    /** Standard Webhooks secret of the provider's delivery webhooks (EMAIL_WEBHOOK_SECRET). */
    webhookSecret: string | null;
    previousWebhookSecret: string | null;
    /** MARKETING_DOUBLE_OPT_IN: consent only after the confirm_subscription link is POSTed. */
    doubleOptIn: boolean;
  };
  declare llm: { baseUrl: string; apiKey: string | null; model: string };
  declare http: { timeoutMs: number; maxAttempts: number };
  declare health: {
    checkTimeoutMs: number;
    degradedMs: { database: number; redis: number; chromadb: number };
  };
  /** A spend that takes the balance below this percent of the tier's monthly allowance sends `low_balance`. */
  declare credits: { lowBalancePercent: number };
  declare retention: {
    webhookArchiveDays: number;
    processedWebhookDays: number;
    accountDeletionGraceDays: number;
  };
  /**
   * BullMQ worker timing: a job whose worker died (no lock renewal for lockDurationMs) is taken back by
   * another worker's stalled-job check, which runs every stalledIntervalMs.
   */
  declare queue: { lockDurationMs: number; stalledIntervalMs: number };
  /**
   * Accepted webhooks are applied by the worker: attempts per event (exponential backoff from retryBaseMs;
   * 10 x 1 s spans about 17 minutes) before it is FAILED and replayable, and events applied in parallel.
   */
  declare webhookProcessing: { attempts: number; retryBaseMs: number; concurrency: number };
  /**
   * How long a SIGTERM/SIGINT may take (in-flight requests and active jobs finishing) before the process
   * gives up and exits 1. Keep it below the supervisor's kill deadline (compose stop_grace_period).
   */
  declare shutdownTimeoutMs: number;
  /** Idle keep-alive of the API's and the worker's HTTP servers (KEEP_ALIVE_TIMEOUT_MS). */
  declare keepAliveTimeoutMs: number;
  /** The BullMQ dashboard at /admin/queues (QUEUE_DASHBOARD; unset = everywhere but production). */
  declare queueDashboard: boolean;
  /** OTLP/HTTP base URL of the trace collector (OTEL_EXPORTER_OTLP_ENDPOINT); null = tracing off. */
  declare otlpEndpoint: string | null;
  /** Request bounds (issue 14 item 2); see docs/decisions/security.md. */
  declare limits: {
    /** JSON bodies of every route but the large ones. */
    bodyBytes: number;
    /** JSON bodies of POST /api/v1/ai/completions and the webhook receivers. */
    largeBodyBytes: number;
    /** Keys plus values of a parsed JSON body, and keys of any one object in it. */
    jsonMaxNodes: number;
    jsonMaxObjectKeys: number;
    /** Per user, authenticated POST/PATCH/PUT/DELETE; 0 turns it off. */
    userWritesPerMinute: number;
    /** At most this many writes in a row (refilled at the minute's rate); 0 or >= the minute's turns it off. */
    userWritesBurst: number;
    /** Per client IP, unauthenticated requests (public routes and 401 answers); 0 turns it off. */
    ipPerMinute: number;
    /** admin.unauthorized audit rows per user and hour (the 403 is answered regardless). */
    adminUnauthorizedAuditPerHour: number;
    /** E-mail link requests per user their token names, per window (EMAIL_LINK_LIMIT, not from the env). */
    emailLinksPerUser: number;
    emailLinkWindowSeconds: number;
    /** Express `trust proxy` hop count: how many reverse proxies add X-Forwarded-For in front of the API. */
    trustProxyHops: number;
  };
  declare testing: boolean;
}
