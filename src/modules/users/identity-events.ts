import { z } from 'zod';

/**
 * Clerk-shaped identity events (DESIGN.md section 4), validated after the signature (spec rule 5). Only
 * what we use is required; unknown members pass through untouched (the archive keeps only the allowlist
 * of archivableIdentityPayload).
 */
const MAX_TIMESTAMP_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export const identityEnvelope = z.object({
  type: z.string().min(1).max(200),
  data: z.record(z.string(), z.unknown()),
  object: z.string().optional(),
  /** Milliseconds since the epoch, when the provider sends it (up to 9999-12-31: a storable date). */
  timestamp: z.number().int().positive().max(MAX_TIMESTAMP_MS).optional(),
});

const identityUserId = z.string().min(1).max(200);

export const identityUserData = z.object({
  id: identityUserId,
  email_addresses: z
    .array(
      z.object({
        id: z.string().min(1).max(200),
        email_address: z.email().max(320),
        /** Clerk: `{status: 'verified' | 'unverified' | ..., strategy}`; read leniently (verifiedAddress). */
        verification: z.unknown().optional(),
      }),
    )
    .max(100),
  primary_email_address_id: z.string().max(200).nullish(),
  /** The provider's version of the user (ms since the epoch); orders user.updated events. */
  updated_at: z.unknown().optional(),
});

export const identityDeletedData = z.object({
  id: identityUserId,
  deleted: z.boolean().optional(),
});

export type IdentityUserData = z.infer<typeof identityUserData>;

/** The primary e-mail address, else the first one; null when the user has none. */
export function primaryEmail(data: IdentityUserData): string | null {
  const primary =
    data.email_addresses.find((address) => address.id === data.primary_email_address_id) ??
    data.email_addresses[0];
  return primary?.email_address ?? null;
}

/**
 * The primary address and whether the provider verified it (its `verification.status` is `verified`).
 * Admin rights need a verified address; anything else (absent, another status, an odd shape) is not.
 */
export function primaryAddress(data: IdentityUserData): { email: string; verified: boolean } | null {
  const primary =
    data.email_addresses.find((address) => address.id === data.primary_email_address_id) ??
    data.email_addresses[0];
  if (!primary) return null;
  const verification = primary.verification as { status?: unknown } | null | undefined;
  const verified =
    verification !== null && typeof verification === 'object' && verification.status === 'verified';
  return { email: primary.email_address, verified };
}

/**
 * When the provider last changed the user: its `updated_at` (ms) when usable, else `fallback` (the event
 * time). Events older than what was applied are not applied (newer wins).
 */
export function identityVersion(data: IdentityUserData, fallback: Date): Date {
  const at = data.updated_at;
  return typeof at === 'number' && Number.isInteger(at) && at > 0 && at <= MAX_TIMESTAMP_MS
    ? new Date(at)
    : fallback;
}

/** Members of the envelope kept in the archive: none of them can hold a name, phone or address. */
const ENVELOPE_FIELDS = ['type', 'object', 'timestamp', 'instance_id', 'unparsable'] as const;
/** Members of `data` kept in the archive (SPEC: "No name, phone or address is stored"). */
const DATA_FIELDS = [
  'id',
  'object',
  'deleted',
  'created_at',
  'updated_at',
  'last_sign_in_at',
  'primary_email_address_id',
] as const;
/** Members of each e-mail address kept: the address, its id and its verification status. */
const EMAIL_FIELDS = ['id', 'object', 'email_address', 'created_at', 'updated_at'] as const;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function pick(source: Json, fields: readonly string[]): Json {
  const out: Json = {};
  for (const field of fields) if (Object.hasOwn(source, field)) out[field] = source[field];
  return out;
}

/**
 * What the identity archive keeps of a delivery: an allowlist of ids, type, object, timestamps and
 * e-mail addresses (with their ids and verification status), never the raw body. Names, phone numbers,
 * images, metadata and anything the provider adds later stay out. Pure, so every caller (intake,
 * replay) archives the same thing.
 */
export function archivableIdentityPayload(payload: unknown): Json {
  // A verified body that is JSON but not an object (a string, an array) could hold anything.
  if (!isObject(payload)) return { not_an_object: true };
  const out = pick(payload, ENVELOPE_FIELDS);
  const data = payload.data;
  if (!isObject(data)) return out;
  const kept = pick(data, DATA_FIELDS);
  if (Array.isArray(data.email_addresses)) {
    kept.email_addresses = data.email_addresses.filter(isObject).map((address) => {
      const email = pick(address, EMAIL_FIELDS);
      const verification = address.verification;
      if (isObject(verification)) email.verification = pick(verification, ['status', 'strategy']);
      return email;
    });
  }
  out.data = kept;
  return out;
}
