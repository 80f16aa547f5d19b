import type { AppConfig } from './app-config.js';
import { DEV_BILLING_WEBHOOK_SECRET, DEV_IDENTITY_WEBHOOK_SECRET, DEV_UNSUBSCRIBE_SECRET } from './env.js';

export type BootCheckName =
  'project_config' | 'secrets' | 'cors_origins' | 'database' | 'redis' | 'public_base_url';

export interface BootRefusal {
  check: BootCheckName;
  reason: string;
}

export interface BootProbes {
  database: () => Promise<void>;
  redis: () => Promise<void>;
}

const MIN_KEY_BYTES = 32;

/** Bytes of the HMAC key behind a Standard Webhooks secret (`whsec_<base64>`), or of a raw secret. */
export function hmacKeyBytes(secret: string): number {
  if (secret.startsWith('whsec_')) return Buffer.from(secret.slice('whsec_'.length), 'base64').length;
  return Buffer.byteLength(secret, 'utf8');
}

function secretsProblem(config: AppConfig): string | null {
  const unsubscribe = config.email.unsubscribeSecret;
  if (!unsubscribe || unsubscribe.length < MIN_KEY_BYTES) {
    return `EMAIL_UNSUBSCRIBE_SECRET is unset or shorter than ${MIN_KEY_BYTES} characters`;
  }
  const keys: [string, string | null][] = [
    ['IDENTITY_WEBHOOK_SECRET', config.identity.webhookSecret],
    ['BILLING_WEBHOOK_SECRET', config.billing.webhookSecret],
    ['EMAIL_UNSUBSCRIBE_SECRET', unsubscribe],
  ];
  for (const [name, value] of keys) {
    if (!value || hmacKeyBytes(value) < MIN_KEY_BYTES)
      return `${name} is unset or shorter than ${MIN_KEY_BYTES} bytes`;
    if ([DEV_IDENTITY_WEBHOOK_SECRET, DEV_BILLING_WEBHOOK_SECRET, DEV_UNSUBSCRIBE_SECRET].includes(value)) {
      return `${name} is the public development default`;
    }
  }
  // Rotation overlap keys are optional, but an accepted key is a key: same rules.
  const previous: [string, string | null][] = [
    ['IDENTITY_WEBHOOK_SECRET_PREVIOUS', config.identity.previousWebhookSecret],
    ['BILLING_WEBHOOK_SECRET_PREVIOUS', config.billing.previousWebhookSecret],
    ['EMAIL_UNSUBSCRIBE_SECRET_PREVIOUS', config.email.previousUnsubscribeSecret],
  ];
  for (const [name, value] of previous) {
    if (value !== null && hmacKeyBytes(value) < MIN_KEY_BYTES)
      return `${name} is shorter than ${MIN_KEY_BYTES} bytes`;
  }
  if (config.testing && config.deployed) return 'TESTING=1 is set in a deployed environment';
  return null;
}

function isLocalOrigin(origin: string): boolean {
  try {
    const host = new URL(origin).hostname;
    return host === 'localhost' || host.endsWith('.localhost') || host === '127.0.0.1' || host === '[::1]';
  } catch {
    return /localhost|127\.0\.0\.1/i.test(origin);
  }
}

/**
 * Unsubscribe links (List-Unsubscribe must be HTTPS) and every other link in e-mail are built on
 * PUBLIC_BASE_URL; unset, it is the local default http://localhost:$PORT.
 */
function publicBaseUrlProblem(config: AppConfig): string | null {
  const url = config.email.publicBaseUrl;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `PUBLIC_BASE_URL is not a URL (${url})`;
  }
  if (parsed.protocol !== 'https:' || isLocalOrigin(parsed.origin)) {
    return `PUBLIC_BASE_URL must be the public https:// URL of this API, not ${url} (unset means http://localhost:$PORT)`;
  }
  return null;
}

/**
 * The spec's boot refusals, in its order, stopping at the first. They apply outside development and
 * test only. The static checks run before any connection is attempted, except the one the spec does not
 * list (public_base_url), which comes last so that the spec's five keep their order and outcomes.
 */
export async function runBootChecks(config: AppConfig, probes: BootProbes): Promise<BootRefusal | null> {
  if (config.env === 'development' || config.env === 'test') return null;

  if (config.project.companyLegalName.trim().toUpperCase() === 'TBD') {
    return { check: 'project_config', reason: 'COMPANY_LEGAL_NAME is still the TBD sentinel' };
  }
  const secrets = secretsProblem(config);
  if (secrets) return { check: 'secrets', reason: secrets };

  const local = config.corsOrigins.find(isLocalOrigin);
  if (local) return { check: 'cors_origins', reason: `CORS_ORIGINS contains ${local}` };

  for (const check of ['database', 'redis'] as const) {
    try {
      await probes[check]();
    } catch (error) {
      return { check, reason: `unreachable: ${describeError(error)}` };
    }
  }
  const publicUrl = publicBaseUrlProblem(config);
  if (publicUrl) return { check: 'public_base_url', reason: publicUrl };
  return null;
}

/** Whitespace (newlines included) collapsed: a refusal is exactly one line. */
export const oneLine = (text: string): string => text.replace(/\s+/g, ' ').trim();

/**
 * A probe failure as non-empty text. Node's connection errors can have an empty message: connecting to
 * `localhost` tries IPv6 and IPv4 and rejects with an AggregateError whose message is '' and whose
 * inner errors say what happened; some errors carry only a code.
 */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return oneLine(String(error)) || 'unknown error';
  const message = oneLine(error.message);
  if (message) return message;
  const inner = error instanceof AggregateError ? error.errors.map(describeError).filter(Boolean) : [];
  const unique = [...new Set(inner)].filter((text) => text !== 'unknown error');
  if (unique.length > 0) return unique.join('; ');
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code) return code;
  return error.name && error.name !== 'Error' ? error.name : 'unknown error';
}

export const formatRefusal = (refusal: BootRefusal): string =>
  `boot refused [${refusal.check}]: ${oneLine(refusal.reason)}`;
