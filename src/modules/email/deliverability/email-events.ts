import { z } from 'zod';

/**
 * Resend's webhook events (resend-node `src/webhooks/interfaces/webhook-event.interface.ts` and the
 * examples of https://resend.com/docs/webhooks/emails/*). Loose objects: a field we do not read is never
 * a reason to refuse an event the provider's SDK parses (DESIGN 5c "real payloads"). The receiver checks
 * the raw payload with them before archiving it, and the worker parses the archived payload again.
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
