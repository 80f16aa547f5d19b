import { Matches, type ValidationOptions } from 'class-validator';

/**
 * No NUL character: PostgreSQL text cannot hold one, so a NUL in a stored or queried string failed the
 * statement (a 500). Other control characters (newlines in a message) stay allowed.
 */
export const HasNoNul = (options: ValidationOptions = {}): PropertyDecorator =>
  // eslint-disable-next-line no-control-regex -- matching NUL is the point
  Matches(/^[^\u0000]*$/, {
    message: ({ property }) => `${property} must not contain NUL characters`,
    ...options,
  });

/**
 * A four-digit year in an ISO 8601 date-time. class-validator's IsISO8601 also passes signed years
 * (`-4714-01-01T00:00:00Z`) that JavaScript turns into an Invalid Date and PostgreSQL cannot store (a 500).
 */
export const HasFourDigitYear = (options: ValidationOptions = {}): PropertyDecorator =>
  Matches(/^\d{4}-/, {
    message: ({ property }) => `${property} must be a date-time with a four-digit year`,
    ...options,
  });
