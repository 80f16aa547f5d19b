import { isISO8601, ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * No NUL character: PostgreSQL text cannot hold one, so a NUL in a stored or queried string failed the
 * statement (a 500). Other control characters (newlines in a message) stay allowed; non-strings are left
 * to IsString.
 */
export const HasNoNul = (options: ValidationOptions = {}): PropertyDecorator =>
  ValidateBy(
    {
      name: 'hasNoNul',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !value.includes('\u0000'),
        defaultMessage: (args) => `${args?.property} must not contain NUL characters`,
      },
    },
    options,
  );

/**
 * Why a value is not an instant this API reads, or null when it is one. Strict ISO 8601 alone is not
 * enough: class-validator passes signed years (`-4714-01-01T00:00:00Z`) that PostgreSQL cannot store, and
 * ISO forms JavaScript's Date cannot read (`2026-W01`, `2026-123`, `20260101`, `2026-01-01T10`,
 * `2026-01-01T10:00:00+01`): both became an Invalid Date and a 500. One message per value, the first
 * problem found.
 */
function instantProblem(value: unknown): string | null {
  const iso = typeof value === 'string' && isISO8601(value, { strict: true });
  if (!iso) return 'must be a valid ISO 8601 date string';
  if (/^[+-]/.test(value)) return 'must be a date-time with a four-digit year';
  if (Number.isNaN(Date.parse(value))) return 'must be a date-time such as 2026-01-01T00:00:00Z';
  return null;
}

/** A date-time input (see instantProblem): the one rule every date-time field of a request goes through. */
export const IsInstant = (options: ValidationOptions = {}): PropertyDecorator =>
  ValidateBy(
    {
      name: 'isInstant',
      validator: {
        validate: (value: unknown) => instantProblem(value) === null,
        defaultMessage: (args) => `${args?.property} ${instantProblem(args?.value)}`,
      },
    },
    options,
  );

/** Unicode code points: what PostgreSQL counts for VARCHAR(n) and length(). */
export const codePointLength = (value: string): number => {
  let count = 0;
  for (const _ of value) count += 1;
  return count;
};

/**
 * At most `max` characters, counted as Unicode code points, for strings stored in a VARCHAR(max) column.
 * class-validator's Length/MaxLength do not count a variation selector (U+FE0E/U+FE0F) after a character
 * while PostgreSQL does: `'❤️'.repeat(200)` passed Length(1, 200) and then failed the insert as 400
 * characters (a 500). Counting the same way as the column makes the 400 come from here instead.
 */
export const MaxCodePoints = (max: number, options: ValidationOptions = {}): PropertyDecorator =>
  ValidateBy(
    {
      name: 'maxCodePoints',
      constraints: [max],
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || codePointLength(value) <= max,
        defaultMessage: (args) => `${args?.property} must be at most ${max} characters`,
      },
    },
    options,
  );
