import { ValidationError } from '../../common/errors/app-error.js';
import { localeMatchKeys } from '../../common/validation/locale.js';
import { SqlParams } from '../../infra/prisma/sql-params.js';

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

export { SqlParams };

/**
 * SQL conditions on `users u` for an audience: active (not soft-deleted) users matching every given
 * criterion. Values only ever travel as parameters; the SQL text is fixed here. A language locale (`de`)
 * also matches its regional variants (`de-AT`, `de_AT`), and an alias its replacement (`iw`: `he` too,
 * `localeMatchKeys`); `signed_up_before` is exclusive.
 */
export function audienceConditions(audience: Audience, params: SqlParams): string[] {
  const conditions = ['u.deleted_at IS NULL'];
  if (audience.tiers) conditions.push(`u.current_tier = ANY(${params.add(audience.tiers)}::text[])`);
  if (audience.locales) {
    const locale = `lower(replace(u.locale, '_', '-'))`;
    const keys = unique(audience.locales.flatMap(localeMatchKeys));
    conditions.push(
      `(${locale} = ANY(${params.add(keys)}::text[]) OR ${locale} LIKE ANY(${params.add(
        keys.map((l) => `${l}-%`),
      )}::text[]))`,
    );
  }
  if (audience.signed_up_after) {
    conditions.push(`u.created_at >= ${params.add(new Date(audience.signed_up_after))}::timestamptz`);
  }
  if (audience.signed_up_before) {
    conditions.push(`u.created_at < ${params.add(new Date(audience.signed_up_before))}::timestamptz`);
  }
  return conditions;
}
