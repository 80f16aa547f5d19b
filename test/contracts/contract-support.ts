import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Helpers for the contract suite: the providers' own published payloads (fixtures/, sources in
 * fixtures/README.md), tied to a test user by the few changes the README lists, and signed the way each
 * provider signs, written here from the providers' documentation rather than with our own signing code,
 * so a bug in ours cannot hide behind a matching bug in the test.
 */
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');

export type Json = Record<string, unknown>;

/** A published payload, parsed afresh on each call (tests may change their copy). */
export function fixture<T = Json>(
  provider: 'paddle' | 'clerk' | 'resend' | 'openai' | 'gemini' | 'llama-cpp' | 'vllm',
  name: string,
): T {
  return JSON.parse(readFileSync(join(FIXTURES, provider, `${name}.json`), 'utf8')) as T;
}

/** Paddle's ids: a prefix and 26 lowercase base-32 characters. */
const PADDLE_ID = /\b(sub|ctm|txn|adj|evt|ntf|add|biz)_([0-9a-z]{26})\b/g;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const PADDLE_UNSET = /^0001-01-01T00:00:00/;

export interface Rebase {
  /** Added to every Paddle id, so each test owns its subscription, customer and transaction. */
  suffix: string;
  /** Every date moves by this much (the story keeps its shape; the unset 0001-01-01 stays unset). */
  shiftMs: number;
  /** Ids replaced before the suffix is added (to join events of one story published for two subscriptions). */
  ids?: Record<string, string>;
}

/** Ties a published Paddle notification to a test: ids suffixed (and optionally joined), dates shifted. */
export function rebase<T>(event: T, options: Rebase): T {
  let text = JSON.stringify(event);
  for (const [from, to] of Object.entries(options.ids ?? {})) text = text.split(from).join(to);
  text = text.replace(PADDLE_ID, (_m, prefix: string, body: string) => `${prefix}_${body}${options.suffix}`);
  return shiftDates(JSON.parse(text) as T, options.shiftMs);
}

function shiftDates<T>(value: T, shiftMs: number): T {
  if (typeof value === 'string') {
    if (!ISO_DATE.test(value) || PADDLE_UNSET.test(value)) return value;
    return new Date(Date.parse(value) + shiftMs).toISOString() as T;
  }
  if (Array.isArray(value)) return value.map((item) => shiftDates(item, shiftMs)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shiftDates(v, shiftMs)])) as T;
  }
  return value;
}

/** A fresh suffix for Paddle ids (lowercase, so ids keep Paddle's alphabet). */
export const newSuffix = (): string => randomBytes(4).toString('hex');

/** The shift that puts `publishedIso` at `now - agoMs`. */
export const shiftTo = (publishedIso: string, agoMs = 60_000): number =>
  Date.now() - agoMs - Date.parse(publishedIso);

/** The checkout token in custom_data, as our checkout hands it to Paddle.js and Paddle sends it back. */
export function withCheckoutToken<T extends { data: Json }>(event: T, token: string): T {
  return { ...event, data: { ...event.data, custom_data: { checkout_token: token } } };
}

/**
 * `Paddle-Signature: ts=<unix seconds>;h1=<hex HMAC-SHA256(secret, "<ts>:<raw body>")>`, as Paddle's
 * "Verify webhook signatures" documentation and its SDKs' Webhooks.unmarshal compute it.
 */
export function paddleSignature(rawBody: string, secret: string, ts = Math.floor(Date.now() / 1000)): string {
  const h1 = createHmac('sha256', secret).update(`${ts}:${rawBody}`).digest('hex');
  return `ts=${ts};h1=${h1}`;
}

/**
 * Standard Webhooks / Svix signing: base64(HMAC-SHA256(base64-decoded key of `whsec_<key>`,
 * "<msg id>.<unix seconds>.<raw body>")), sent as `v1,<signature>`; several space-separated during a
 * secret rotation. `headerSet` picks Svix's `svix-*` names (Clerk) or the spec's `webhook-*` names.
 */
export function standardWebhookHeaders(
  rawBody: string,
  secrets: string[],
  options: { headerSet: 'svix' | 'webhook'; id?: string; at?: Date },
): Record<string, string> {
  const id = options.id ?? `msg_${randomUUID().replaceAll('-', '')}`;
  const ts = String(Math.floor((options.at ?? new Date()).getTime() / 1000));
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    return `v1,${createHmac('sha256', key).update(`${id}.${ts}.${rawBody}`).digest('base64')}`;
  });
  const prefix = options.headerSet;
  return {
    'content-type': 'application/json',
    [`${prefix}-id`]: id,
    [`${prefix}-timestamp`]: ts,
    [`${prefix}-signature`]: signatures.join(' '),
  };
}

/** A secret the way Svix generates one: `whsec_` and 24 random bytes in base64. */
export const svixSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;
