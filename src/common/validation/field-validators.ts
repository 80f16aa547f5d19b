import { ValidateBy, type ValidationOptions } from 'class-validator';

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
 * No signed or expanded year in an ISO 8601 date-time. class-validator's IsISO8601 passes signed years
 * (`-4714-01-01T00:00:00Z`) that JavaScript turns into an Invalid Date and PostgreSQL cannot store (a 500).
 * Anything that is not such a string is left to IsISO8601, so a malformed value gets one error, not two.
 */
export const HasFourDigitYear = (options: ValidationOptions = {}): PropertyDecorator =>
  ValidateBy(
    {
      name: 'hasFourDigitYear',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !/^[+-]/.test(value),
        defaultMessage: (args) => `${args?.property} must be a date-time with a four-digit year`,
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
