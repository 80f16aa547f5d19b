import { ValidationError } from '../../common/errors/app-error.js';
import type { Prisma } from '../../generated/prisma/client.js';

/** The stored audience of a run (snake_case, as on the wire). Never SQL: it becomes a Prisma filter. */
export interface Audience {
  tiers?: string[];
  locales?: string[];
  signed_up_after?: string;
  signed_up_before?: string;
}

const unique = <T>(items: T[]) => [...new Set(items)];
const normalizeLocale = (locale: string) => locale.trim().toLowerCase().replace(/_/g, '-');

/** Checks what the DTO cannot (known tiers, date order) and returns a canonical audience. */
export function normalizeAudience(input: Audience, knownTiers: string[]): Audience {
  const audience: Audience = {};
  if (input.tiers) {
    const unknown = input.tiers.filter((tier) => !knownTiers.includes(tier));
    if (unknown.length > 0) {
      throw new ValidationError('The audience names an unknown tier.', [
        {
          field: 'audience.tiers',
          message: `unknown tier(s) ${unknown.join(', ')}; known: ${knownTiers.join(', ')}`,
        },
      ]);
    }
    audience.tiers = unique(input.tiers).sort();
  }
  if (input.locales) audience.locales = unique(input.locales.map(normalizeLocale)).sort();
  const after = input.signed_up_after ? new Date(input.signed_up_after) : null;
  const before = input.signed_up_before ? new Date(input.signed_up_before) : null;
  if (after && before && after >= before) {
    throw new ValidationError('The signup date range is empty.', [
      { field: 'audience.signed_up_after', message: 'must be earlier than signed_up_before' },
    ]);
  }
  if (after) audience.signed_up_after = after.toISOString();
  if (before) audience.signed_up_before = before.toISOString();
  return audience;
}

/** Reads an audience back from the database, keeping only the known criteria. */
export function storedAudience(value: unknown): Audience {
  const raw = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
  const strings = (v: unknown) =>
    Array.isArray(v) && v.every((item) => typeof item === 'string') ? (v as string[]) : undefined;
  const audience: Audience = {};
  if (strings(raw.tiers)) audience.tiers = strings(raw.tiers);
  if (strings(raw.locales)) audience.locales = strings(raw.locales);
  if (typeof raw.signed_up_after === 'string') audience.signed_up_after = raw.signed_up_after;
  if (typeof raw.signed_up_before === 'string') audience.signed_up_before = raw.signed_up_before;
  return audience;
}

/**
 * Active (not soft-deleted) users matching every given criterion. A language locale (`de`) also matches
 * its regional variants (`de-AT`, `de_AT`); `signed_up_before` is exclusive.
 */
export function audienceWhere(audience: Audience): Prisma.UserWhereInput {
  const and: Prisma.UserWhereInput[] = [{ deletedAt: null }];
  if (audience.tiers) and.push({ currentTier: { in: audience.tiers } });
  if (audience.locales) {
    and.push({
      OR: audience.locales.flatMap((locale) => [
        { locale: { equals: locale, mode: 'insensitive' as const } },
        { locale: { startsWith: `${locale}-`, mode: 'insensitive' as const } },
        { locale: { startsWith: `${locale}_`, mode: 'insensitive' as const } },
      ]),
    });
  }
  if (audience.signed_up_after || audience.signed_up_before) {
    and.push({
      createdAt: {
        ...(audience.signed_up_after ? { gte: new Date(audience.signed_up_after) } : {}),
        ...(audience.signed_up_before ? { lt: new Date(audience.signed_up_before) } : {}),
      },
    });
  }
  return { AND: and };
}
