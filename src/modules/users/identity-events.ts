import { z } from 'zod';

/**
 * Clerk-shaped identity events (DESIGN.md section 4), validated after the signature (spec rule 5). Only
 * what we use is required; unknown members pass through untouched (they are archived raw anyway).
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
    .array(z.object({ id: z.string().min(1).max(200), email_address: z.email().max(320) }))
    .max(100),
  primary_email_address_id: z.string().max(200).nullish(),
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
