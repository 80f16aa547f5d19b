import { z } from 'zod';
import type { AppConfig, AppEnv } from './app-config.js';
import { canonicalEmail } from '../common/validation/canonical-email.js';
import {
  BILLING_CYCLES,
  type BillingCycle,
  projectConfig as defaultProjectConfig,
  type ProjectConfig,
  type TierConfig,
} from './project.config.js';
import { parseRollover } from '../modules/credits/rollover.js';
import { ORPHAN_AFTER_MS } from '../modules/credits/orphan-window.js';
import { MAX_HTTP_ATTEMPTS, RETRY_AFTER_CAP_MS } from '../infra/http/retry-policy.js';

export class ConfigError extends Error {}

const csv = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);

/** `a:b,c:d` -> {a: 'b', c: 'd'} */
const pairs = (name: string, value: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const item of csv(value)) {
    const at = item.indexOf(':');
    if (at <= 0 || at === item.length - 1)
      throw new ConfigError(`${name}: expected key:value pairs, got "${item}"`);
    const key = item.slice(0, at).trim();
    // A key given twice is a mistake to fix, not a silent "last one wins" (PRO:none,PRO:full).
    if (Object.hasOwn(out, key)) throw new ConfigError(`${name}: ${key} is given twice`);
    out[key] = item.slice(at + 1).trim();
  }
  return out;
};

/**
 * BILLING_PRICE_TIERS=pri_pro:PRO:month,pri_pro_y:PRO:year (price -> tier, optionally its billing cycle).
 * Entries without a cycle (`pri_pro:PRO`, as before cycles existed) are accepted when no entry names one;
 * a mix is refused, because a price whose cycle is unknown next to one whose cycle is known is exactly
 * what moved annual subscribers onto a monthly price.
 */
function priceTiersOf(value: string): {
  tiers: Record<string, string>;
  cycles: Record<string, BillingCycle>;
} {
  const tiers: Record<string, string> = {};
  const cycles: Record<string, BillingCycle> = {};
  for (const [price, rest] of Object.entries(pairs('BILLING_PRICE_TIERS', value))) {
    const [tier, cycle, ...extra] = rest.split(':').map((part) => part.trim());
    if (extra.length > 0 || tier === '' || cycle === '') {
      throw new ConfigError(
        `BILLING_PRICE_TIERS: expected price:TIER or price:TIER:month|year, got "${price}:${rest}"`,
      );
    }
    tiers[price] = tier;
    if (cycle === undefined) continue;
    if ((BILLING_CYCLES as readonly string[]).includes(cycle)) {
      cycles[price] = cycle as BillingCycle;
    } else {
      throw new ConfigError(
        `BILLING_PRICE_TIERS: price ${price} has billing cycle "${cycle}"; expected ${BILLING_CYCLES.join(' or ')}`,
      );
    }
  }
  return { tiers, cycles };
}

/** BILLING_CREDIT_PACKS=pri_pack_s:500,pri_pack_l:3000 (one-time price -> credits) over the project config. */
function creditPacksOf(
  value: string | undefined,
  fallback: Record<string, number>,
  priceTiers: Record<string, string>,
): Record<string, number> {
  const packs: Record<string, number> = {};
  const entries =
    value !== undefined ? Object.entries(pairs('BILLING_CREDIT_PACKS', value)) : Object.entries(fallback);
  for (const [price, raw] of entries) {
    const credits = Number(raw);
    if (!Number.isSafeInteger(credits) || credits < 1 || credits > 1_000_000_000) {
      throw new ConfigError(
        `BILLING_CREDIT_PACKS: pack ${price} needs a whole number of credits from 1, got "${raw}"`,
      );
    }
    if (Object.hasOwn(priceTiers, price)) {
      throw new ConfigError(
        `BILLING_CREDIT_PACKS: price ${price} is already the price of tier ${priceTiers[price]}`,
      );
    }
    packs[price] = credits;
  }
  return packs;
}

/** CREDIT_ROLLOVER=PRO:none,TEAM:cap:2000 over each tier's `rollover` (default full). */
function withRollover(
  tiers: Record<string, TierConfig>,
  value: string | undefined,
): Record<string, TierConfig> {
  const overrides = value !== undefined ? pairs('CREDIT_ROLLOVER', value) : {};
  const out: Record<string, TierConfig> = {};
  for (const [tier, rule] of Object.entries(overrides)) {
    if (!Object.hasOwn(tiers, tier)) throw new ConfigError(`CREDIT_ROLLOVER: unknown tier ${tier}`);
    if (!parseRollover(rule))
      throw new ConfigError(`CREDIT_ROLLOVER: ${tier}: expected none, full or cap:<n>, got "${rule}"`);
  }
  for (const [tier, config] of Object.entries(tiers)) {
    const rollover = Object.hasOwn(overrides, tier) ? overrides[tier] : (config.rollover ?? 'full');
    if (!parseRollover(rollover)) {
      throw new ConfigError(
        `project config: tier ${tier} rollover must be none, full or cap:<n>, got "${rollover}"`,
      );
    }
    out[tier] = { ...config, rollover };
  }
  return out;
}

const optional = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** An integer variable with a default and bounds; empty means the default. */
const int = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  optional.transform((v, ctx) => {
    if (v === undefined) return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) {
      ctx.addIssue({ code: 'custom', message: `expected an integer between ${min} and ${max}, got "${v}"` });
      return z.NEVER;
    }
    return n;
  });

/** An optional positive number (no default). */
const positive = optional.transform((v, ctx) => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) {
    ctx.addIssue({ code: 'custom', message: `expected a positive number, got "${v}"` });
    return z.NEVER;
  }
  return n;
});

const url = optional.pipe(z.url({ protocol: /^(https?|postgres(ql)?|rediss?)$/ }).optional());

/**
 * A URL that can be turned off: unset is `undefined` (the default applies), set but empty is `null`
 * (explicitly off), anything else must be an http(s) URL.
 */
const urlOrOff = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined) return undefined;
    const value = v.trim();
    if (value === '') return null;
    if (!z.url({ protocol: /^https?$/ }).safeParse(value).success) {
      ctx.addIssue({ code: 'custom', message: 'expected an http(s) URL, or an empty value to turn it off' });
      return z.NEVER;
    }
    return value;
  });

/**
 * A metered call holds its reservation while the provider is called. Its worst case (every attempt
 * timing out, every wait between attempts at the Retry-After cap) must end before the reconciler takes the
 * hold for orphaned, or a live call is refunded and its answer given away: 3 x 79,999 + 2 x 30,000 ms is
 * just under 5 minutes.
 */
export const MAX_HTTP_TIMEOUT_MS = Math.floor(
  (ORPHAN_AFTER_MS - 1 - (MAX_HTTP_ATTEMPTS - 1) * RETRY_AFTER_CAP_MS) / MAX_HTTP_ATTEMPTS,
);

const schema = z.object({
  APP_ENV: optional.pipe(z.enum(['development', 'test', 'staging', 'production']).optional()),
  PORT: int(3000, 0, 65535),
  WORKER_PORT: int(3001, 0, 65535),
  METRICS_PORT: int(0, 0, 65535),
  LOG_LEVEL: optional.pipe(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional()),
  PROJECT_SLUG: optional,
  COMPANY_LEGAL_NAME: optional,
  ADMIN_EMAILS: optional,
  CORS_ORIGINS: optional,
  DATABASE_URL: url,
  DATABASE_POOL_SIZE: int(10, 1, 500),
  DATABASE_STATEMENT_TIMEOUT_MS: int(15000, 0),
  REDIS_URL: url,
  REDIS_KEY_PREFIX: optional,
  VECTOR_STORE_URL: url,
  IDENTITY_JWKS_URL: url,
  IDENTITY_ISSUER: optional,
  IDENTITY_AUDIENCE: optional,
  IDENTITY_AUTHORIZED_PARTIES: optional,
  IDENTITY_ALLOW_ANY_AUDIENCE: optional.pipe(z.enum(['true', 'false']).optional()),
  IDENTITY_WEBHOOK_SECRET: optional,
  IDENTITY_WEBHOOK_SECRET_PREVIOUS: optional,
  IDENTITY_MAX_TOKEN_AGE_SECONDS: int(86400, 60, 31 * 86400),
  BILLING_WEBHOOK_SECRET: optional,
  BILLING_WEBHOOK_SECRET_PREVIOUS: optional,
  BILLING_API_URL: url,
  BILLING_API_KEY: optional,
  BILLING_PRICE_TIERS: optional,
  BILLING_CHECKOUT_TOKEN_TTL_SECONDS: int(3600, 60),
  BILLING_BACKFILL_INTERVAL_MINUTES: int(10, 1, 1440),
  BILLING_BACKFILL_SINCE: optional,
  BILLING_DRIFT_GRACE_MINUTES: int(60, 0, 10_080),
  BILLING_CREDIT_PACKS: optional,
  CREDIT_ROLLOVER: optional,
  LOW_BALANCE_PERCENT: int(10, 0, 100),
  EMAIL_PROVIDER: optional.pipe(z.enum(['console', 'resend']).optional()),
  EMAIL_API_URL: url,
  EMAIL_API_KEY: optional,
  EMAIL_FROM: optional,
  EMAIL_UNSUBSCRIBE_SECRET: optional,
  EMAIL_UNSUBSCRIBE_SECRET_PREVIOUS: optional,
  EMAIL_MAX_REQUESTS_PER_SECOND: positive,
  EMAIL_SEND_RETRIES: int(3, 0, 9),
  EMAIL_WEBHOOK_SECRET: optional,
  EMAIL_WEBHOOK_SECRET_PREVIOUS: optional,
  MARKETING_DOUBLE_OPT_IN: optional.pipe(z.enum(['true', 'false']).optional()),
  DISPOSABLE_DOMAINS_URL: urlOrOff,
  PUBLIC_BASE_URL: url,
  LLM_BASE_URL: url,
  LLM_API_KEY: optional,
  LLM_MODEL: optional,
  HTTP_TIMEOUT_MS: int(30000, 1, MAX_HTTP_TIMEOUT_MS),
  // Spec limits: "retry of external calls: at most 3 attempts". A larger value would break that promise.
  HTTP_MAX_ATTEMPTS: int(MAX_HTTP_ATTEMPTS, 1, MAX_HTTP_ATTEMPTS),
  HEALTH_CHECK_TIMEOUT_MS: int(2500, 1),
  STATUS_DEGRADED_MS: int(500, 1),
  STATUS_DEGRADED_MS_DATABASE: positive,
  STATUS_DEGRADED_MS_REDIS: positive,
  STATUS_DEGRADED_MS_CHROMADB: positive,
  WEBHOOK_ARCHIVE_RETENTION_DAYS: int(90, 1),
  PROCESSED_WEBHOOK_RETENTION_DAYS: int(400, 1),
  ACCOUNT_DELETION_GRACE_DAYS: int(30, 0),
  QUEUE_LOCK_DURATION_MS: int(30000, 1000, 3_600_000),
  QUEUE_STALLED_INTERVAL_MS: int(30000, 500, 3_600_000),
  WEBHOOK_PROCESS_ATTEMPTS: int(10, 1, 100),
  WEBHOOK_RETRY_BASE_MS: int(1000, 10, 600_000),
  WEBHOOK_CONCURRENCY: int(64, 1, 256),
  SHUTDOWN_TIMEOUT_MS: int(25000, 1000, 3_600_000),
  // Idle keep-alive of the HTTP servers: longer than the reverse proxy's idle timeout (Google Cloud: 600 s).
  KEEP_ALIVE_TIMEOUT_MS: int(65_000, 1000, 3_600_000),
  LEAD_MAGNET_PREFIXES: optional,
  BODY_LIMIT_KB: int(64, 1, 10_240),
  BODY_LIMIT_LARGE_KB: int(1024, 1, 10_240),
  JSON_MAX_NODES: int(10_000, 100, 1_000_000),
  JSON_MAX_OBJECT_KEYS: int(1000, 10, 100_000),
  RATE_LIMIT_WRITES_PER_MINUTE: int(120, 0),
  RATE_LIMIT_WRITES_BURST: int(30, 0),
  RATE_LIMIT_PUBLIC_PER_MINUTE: int(60, 0),
  ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR: int(20, 0),
  TRUST_PROXY_HOPS: int(0, 0, 10),
  TESTING: optional,
  QUEUE_DASHBOARD: optional.pipe(z.enum(['true', 'false']).optional()),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional.pipe(z.url({ protocol: /^https?$/ }).optional()),
});

/**
 * Parses and validates the environment once. Everything else receives the typed result; nothing else
 * reads process.env. Throws one ConfigError listing every problem found (`VAR: message; VAR: message`),
 * so a broken .env is fixed in one round rather than one variable per boot.
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  project: ProjectConfig = defaultProjectConfig,
): AppConfig {
  const problems: string[] = [];
  let parsed = schema.safeParse(env);
  if (!parsed.success) {
    problems.push(...parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
    // The rules below still run on the other variables (the bad ones take their defaults), so their
    // problems are reported in the same message.
    const bad = new Set(parsed.error.issues.map((issue) => String(issue.path[0])));
    parsed = schema.safeParse(Object.fromEntries(Object.entries(env).filter(([name]) => !bad.has(name))));
    if (!parsed.success) throw new ConfigError(problems.join('; '));
  }
  /** Runs a check that throws ConfigError; records its message and goes on with `fallback`. */
  const checked = <T>(fn: () => T, fallback: T): T => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(err.message);
      return fallback;
    }
  };
  const e = parsed.data;
  const appEnv: AppEnv = e.APP_ENV ?? 'development';
  const deployed = appEnv === 'staging' || appEnv === 'production';
  const local = !deployed;

  const { tiers: priceTiers, cycles: priceCycles } = e.BILLING_PRICE_TIERS
    ? checked(() => priceTiersOf(e.BILLING_PRICE_TIERS!), {
        tiers: project.priceTiers,
        cycles: project.priceCycles ?? {},
      })
    : { tiers: project.priceTiers, cycles: project.priceCycles ?? {} };
  const mergedProject: ProjectConfig = {
    ...project,
    projectSlug: e.PROJECT_SLUG ?? project.projectSlug,
    companyLegalName: e.COMPANY_LEGAL_NAME ?? project.companyLegalName,
    // Compared in canonical ASCII form (no Unicode case folding): see canonicalEmail.
    adminEmails: (e.ADMIN_EMAILS !== undefined ? csv(e.ADMIN_EMAILS) : project.adminEmails).flatMap((m) => {
      const canonical = canonicalEmail(m);
      if (!canonical) problems.push(`ADMIN_EMAILS: "${m}" is not a printable ASCII address`);
      return canonical ? [canonical] : [];
    }),
    priceTiers,
    priceCycles,
    leadMagnetPrefixes:
      e.LEAD_MAGNET_PREFIXES !== undefined
        ? checked(() => pairs('LEAD_MAGNET_PREFIXES', e.LEAD_MAGNET_PREFIXES!), project.leadMagnetPrefixes)
        : project.leadMagnetPrefixes,
  };
  if (!mergedProject.tiers.FREE) problems.push('project config: tier FREE is missing');
  mergedProject.creditPacks = checked(
    () => creditPacksOf(e.BILLING_CREDIT_PACKS, project.creditPacks ?? {}, priceTiers),
    {},
  );
  mergedProject.tiers = checked(
    () => withRollover(mergedProject.tiers, e.CREDIT_ROLLOVER),
    mergedProject.tiers,
  );
  for (const [price, tier] of Object.entries(priceTiers)) {
    if (!mergedProject.tiers[tier] || tier === 'FREE') {
      problems.push(`BILLING_PRICE_TIERS: price ${price} maps to unknown paid tier ${tier}`);
    }
  }
  const withoutCycle = Object.keys(priceTiers).filter((price) => !Object.hasOwn(priceCycles, price));
  if (withoutCycle.length > 0 && withoutCycle.length < Object.keys(priceTiers).length) {
    problems.push(
      `BILLING_PRICE_TIERS: ${withoutCycle.join(', ')} name no billing cycle while other prices do; ` +
        'add :month or :year to every price',
    );
  }

  if (e.IDENTITY_JWKS_URL && !e.IDENTITY_ISSUER) {
    problems.push('IDENTITY_ISSUER: required when IDENTITY_JWKS_URL is set (the issuer is always checked)');
  }

  if (e.EMAIL_PROVIDER === 'resend' && !e.EMAIL_API_KEY) {
    problems.push('EMAIL_API_KEY: required when EMAIL_PROVIDER is resend');
  }
  if (problems.length > 0) throw new ConfigError(problems.join('; '));

  const degraded = e.STATUS_DEGRADED_MS;
  return {
    env: appEnv,
    deployed,
    port: e.PORT,
    workerPort: e.WORKER_PORT,
    metricsPort: e.METRICS_PORT,
    logLevel: e.LOG_LEVEL ?? (appEnv === 'test' ? 'silent' : 'info'),
    project: mergedProject,
    corsOrigins: csv(e.CORS_ORIGINS),
    database: {
      url: e.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/subscription_service',
      poolSize: e.DATABASE_POOL_SIZE,
      statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
    },
    redis: { url: e.REDIS_URL ?? 'redis://127.0.0.1:6379', keyPrefix: e.REDIS_KEY_PREFIX ?? 'subsvc' },
    vectorStoreUrl: e.VECTOR_STORE_URL ?? null,
    identity: {
      jwksUrl: e.IDENTITY_JWKS_URL ?? null,
      issuer: e.IDENTITY_ISSUER ?? null,
      audience: e.IDENTITY_AUDIENCE ?? null,
      authorizedParties: csv(e.IDENTITY_AUTHORIZED_PARTIES),
      allowAnyAudience: e.IDENTITY_ALLOW_ANY_AUDIENCE === 'true',
      // Development-only defaults keep `npm start` working without secrets; deployed boots refuse them
      // (boot-checks.ts) because they are public.
      webhookSecret: e.IDENTITY_WEBHOOK_SECRET ?? (local ? DEV_IDENTITY_WEBHOOK_SECRET : null),
      previousWebhookSecret: e.IDENTITY_WEBHOOK_SECRET_PREVIOUS ?? null,
      maxTokenAgeSeconds: e.IDENTITY_MAX_TOKEN_AGE_SECONDS,
    },
    billing: {
      webhookSecret: e.BILLING_WEBHOOK_SECRET ?? (local ? DEV_BILLING_WEBHOOK_SECRET : null),
      previousWebhookSecret: e.BILLING_WEBHOOK_SECRET_PREVIOUS ?? null,
      // No silent sandbox when deployed: unset stays null there and the boot is refused (boot-checks.ts).
      apiUrl: e.BILLING_API_URL ?? (local ? DEFAULT_BILLING_API_URL : null),
      apiKey: e.BILLING_API_KEY ?? null,
      checkoutTokenTtlSeconds: e.BILLING_CHECKOUT_TOKEN_TTL_SECONDS,
      // Off without an explicit provider URL and key: the default sandbox URL is not a provider to sync from.
      backfillEnabled: !!e.BILLING_API_URL && !!e.BILLING_API_KEY,
      backfillIntervalMinutes: e.BILLING_BACKFILL_INTERVAL_MINUTES,
      backfillSince: e.BILLING_BACKFILL_SINCE ?? null,
      driftGraceMinutes: e.BILLING_DRIFT_GRACE_MINUTES,
    },
    email: {
      provider: e.EMAIL_PROVIDER ?? 'console',
      apiUrl: e.EMAIL_API_URL ?? 'https://api.resend.com',
      apiKey: e.EMAIL_API_KEY ?? null,
      from: e.EMAIL_FROM ?? 'Subscription Service <no-reply@example.com>',
      unsubscribeSecret: e.EMAIL_UNSUBSCRIBE_SECRET ?? (local ? DEV_UNSUBSCRIBE_SECRET : null),
      previousUnsubscribeSecret: e.EMAIL_UNSUBSCRIBE_SECRET_PREVIOUS ?? null,
      publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ''),
      maxRequestsPerSecond: e.EMAIL_MAX_REQUESTS_PER_SECOND ?? 8.3,
      sendRetries: e.EMAIL_SEND_RETRIES,
      // Resend's webhooks (Standard Webhooks / Svix); unset: POST /webhooks/email answers 503.
      webhookSecret: e.EMAIL_WEBHOOK_SECRET ?? null,
      previousWebhookSecret: e.EMAIL_WEBHOOK_SECRET_PREVIOUS ?? null,
      doubleOptIn: e.MARKETING_DOUBLE_OPT_IN === 'true',
      // Deployed: the upstream list unless set (empty turns the refresh off). Locally nothing reaches out.
      disposableListUrl:
        e.DISPOSABLE_DOMAINS_URL === undefined
          ? deployed
            ? DEFAULT_DISPOSABLE_DOMAINS_URL
            : null
          : e.DISPOSABLE_DOMAINS_URL,
    },
    llm: {
      baseUrl: (e.LLM_BASE_URL ?? 'https://api.openai.com/v1').replace(/\/+$/, ''),
      apiKey: e.LLM_API_KEY ?? null,
      model: e.LLM_MODEL ?? 'gpt-4o-mini',
    },
    http: { timeoutMs: e.HTTP_TIMEOUT_MS, maxAttempts: e.HTTP_MAX_ATTEMPTS },
    health: {
      checkTimeoutMs: e.HEALTH_CHECK_TIMEOUT_MS,
      degradedMs: {
        database: e.STATUS_DEGRADED_MS_DATABASE ?? degraded,
        redis: e.STATUS_DEGRADED_MS_REDIS ?? degraded,
        chromadb: e.STATUS_DEGRADED_MS_CHROMADB ?? degraded,
      },
    },
    credits: { lowBalancePercent: e.LOW_BALANCE_PERCENT },
    retention: {
      webhookArchiveDays: e.WEBHOOK_ARCHIVE_RETENTION_DAYS,
      processedWebhookDays: Math.max(e.PROCESSED_WEBHOOK_RETENTION_DAYS, e.WEBHOOK_ARCHIVE_RETENTION_DAYS),
      accountDeletionGraceDays: e.ACCOUNT_DELETION_GRACE_DAYS,
    },
    queue: { lockDurationMs: e.QUEUE_LOCK_DURATION_MS, stalledIntervalMs: e.QUEUE_STALLED_INTERVAL_MS },
    webhookProcessing: {
      attempts: e.WEBHOOK_PROCESS_ATTEMPTS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      concurrency: e.WEBHOOK_CONCURRENCY,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    // Unset: on everywhere but production (like /docs); `true`/`false` decide in every environment.
    queueDashboard: e.QUEUE_DASHBOARD ? e.QUEUE_DASHBOARD === 'true' : appEnv !== 'production',
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT?.replace(/\/+$/, '') ?? null,
    limits: {
      bodyBytes: e.BODY_LIMIT_KB * 1024,
      largeBodyBytes: Math.max(e.BODY_LIMIT_LARGE_KB, e.BODY_LIMIT_KB) * 1024,
      jsonMaxNodes: e.JSON_MAX_NODES,
      jsonMaxObjectKeys: e.JSON_MAX_OBJECT_KEYS,
      userWritesPerMinute: e.RATE_LIMIT_WRITES_PER_MINUTE,
      userWritesBurst: e.RATE_LIMIT_WRITES_BURST,
      ipPerMinute: e.RATE_LIMIT_PUBLIC_PER_MINUTE,
      adminUnauthorizedAuditPerHour: e.ADMIN_UNAUTHORIZED_AUDIT_PER_HOUR,
      emailLinksPerUser: EMAIL_LINK_LIMIT.perUser,
      emailLinkWindowSeconds: EMAIL_LINK_LIMIT.windowSeconds,
      trustProxyHops: e.TRUST_PROXY_HOPS,
    },
    testing: e.TESTING === '1',
  };
}

/**
 * Requests to the e-mail links (unsubscribe and confirm, GET and POST) per user their token names, per
 * window: a valid token is served beyond the per-IP limit (mail providers POST one-click unsubscribes for
 * many recipients from a few servers), so this bounds a leaked link's replay. One recipient's mail
 * provider POSTs once, a person opens the page and presses its button (2), link scanners fetch the page a
 * few times. Not an environment variable: a security bound, changed here (docs/decisions/security.md).
 */
export const EMAIL_LINK_LIMIT = { perUser: 20, windowSeconds: 60 } as const;

/** The maintained upstream blocklist (the disposable-email-domains project), refreshed daily when deployed. */
export const DEFAULT_DISPOSABLE_DOMAINS_URL =
  'https://raw.githubusercontent.com/disposable-email-domains/disposable-email-domains/main/disposable_email_blocklist.conf';

/** Paddle's sandbox: the local default only. */
export const DEFAULT_BILLING_API_URL = 'https://sandbox-api.paddle.com';

export const DEV_IDENTITY_WEBHOOK_SECRET = 'whsec_ZGV2LWlkZW50aXR5LXdlYmhvb2stc2VjcmV0LW5vdC1mb3ItcHJvZA==';
export const DEV_BILLING_WEBHOOK_SECRET = 'dev-billing-webhook-secret-not-for-production';
export const DEV_UNSUBSCRIBE_SECRET = 'dev-unsubscribe-secret-not-for-production-use';
