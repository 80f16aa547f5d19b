import { z } from 'zod';
import { normalizeAddress } from '../send-policy.js';

/**
 * Resend's webhook events (resend-node `src/webhooks/interfaces/webhook-event.interface.ts` and the
 * examples of https://resend.com/docs/webhooks/emails/*). Loose objects: a field we do not read is never
 * a reason to refuse an event the provider's SDK parses (DESIGN 5c "real payloads"). They are applied to
 * archivableEmailPayload's projection, which is what the archive holds and the worker reads.
 */
export const emailEnvelope = z.looseObject({
  type: z.string().min(1).max(100),
  created_at: z.string().max(100).nullish(),
  data: z.looseObject({}),
});

const address = z.string().min(3).max(320);

/** What every e-mail event carries that we read: the provider's message id and the recipients. */
export const emailEventData = z.looseObject({
  email_id: z.string().min(1).max(255),
  to: z.array(address).min(1).max(50),
});

export const bouncedData = emailEventData.extend({
  bounce: z.looseObject({
    // Permanent | Transient | Undetermined (Resend's bounce types)
    type: z.string().min(1).max(50),
  }),
});

export const HANDLED_EMAIL_EVENTS = [
  'email.bounced',
  'email.complained',
  'email.delivered',
  'email.delivery_delayed',
] as const;

/** The data schema of a handled event type; null for a type that is acknowledged only. */
export function dataSchemaFor(type: string): z.ZodType | null {
  if (type === 'email.bounced') return bouncedData;
  if ((HANDLED_EMAIL_EVENTS as readonly string[]).includes(type)) return emailEventData;
  return null;
}

/** Only a permanent bounce suppresses the address; a transient or undetermined one is recorded. */
export const isPermanentBounce = (bounce: { type: string }): boolean =>
  bounce.type.toLowerCase() === 'permanent';

/**
 * Members of the envelope kept in the archive; `unparsable` and `not_an_object` are the markers of a body
 * that was not JSON (StandardWebhooksVerifier) or not a JSON object (below).
 */
const ENVELOPE_FIELDS = ['type', 'created_at', 'unparsable', 'not_an_object'] as const;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
/** A kept member's value: a scalar as it is; an object or array (which could hold anything) as null. */
const scalar = (value: unknown): unknown => (value !== null && typeof value === 'object' ? null : value);

/**
 * What the e-mail archive keeps of a delivery: the envelope's `type` and `created_at`, and of `data` only
 * what the worker's handlers read: `email_id`, the recipients `to` (normalized: trimmed and lower-cased,
 * as the suppression list compares them, so the erasure finds them by containment through the index
 * webhook_events_email_data_idx) and `bounce.type`. Subject, sender, headers, tags, a click's IP address,
 * user agent and link, an open's details, the bounce's diagnostic text and any field Resend adds later are
 * never stored. A member of the wrong shape keeps its name with a null (an object could hold anything), so
 * an event whose handled members are malformed stays malformed (an object or array as `created_at` counts
 * as none: the signed time is used). Pure, so the receiver validates, and the worker and every replay read,
 * this one document.
 */
export function archivableEmailPayload(payload: unknown): Json {
  // A verified body that is JSON but not an object (a string, an array) could hold anything.
  if (!isObject(payload)) return { not_an_object: true };
  const out: Json = {};
  for (const field of ENVELOPE_FIELDS) if (Object.hasOwn(payload, field)) out[field] = scalar(payload[field]);
  if (!Object.hasOwn(payload, 'data')) return out;
  const data = payload.data;
  if (!isObject(data)) {
    out.data = null;
    return out;
  }
  const kept: Json = {};
  if (Object.hasOwn(data, 'email_id')) kept.email_id = scalar(data.email_id);
  if (Object.hasOwn(data, 'to')) {
    kept.to = Array.isArray(data.to)
      ? data.to.map((address) => (typeof address === 'string' ? normalizeAddress(address) : scalar(address)))
      : null;
  }
  if (Object.hasOwn(data, 'bounce')) {
    const bounce = data.bounce;
    if (!isObject(bounce)) kept.bounce = null;
    else kept.bounce = Object.hasOwn(bounce, 'type') ? { type: scalar(bounce.type) } : {};
  }
  out.data = kept;
  return out;
}
