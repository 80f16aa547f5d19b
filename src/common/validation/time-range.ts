import { applyDecorators } from '@nestjs/common';
import { IsISO8601, IsOptional } from 'class-validator';
import { ValidationError } from '../errors/app-error.js';
import { ApiTimestamp } from '../openapi/api-fields.js';
import { HasFourDigitYear } from './field-validators.js';

/**
 * An optional instant in a query or body: strict ISO 8601 with a four-digit year (a `+275760-...` year
 * is refused, not a 500), documented as a date-time. Every `from`/`to`/`signed_up_*` filter uses it.
 */
export const OptionalInstant = (): PropertyDecorator =>
  applyDecorators(IsOptional(), IsISO8601({ strict: true }), HasFourDigitYear(), ApiTimestamp());

/** An inclusive `from`..`to` filter of the admin lists: either end may be open; `from` after `to` is a 400. */
export function inclusiveRange(fromText?: string, toText?: string): { from?: Date; to?: Date } {
  const from = fromText ? new Date(fromText) : undefined;
  const to = toText ? new Date(toText) : undefined;
  if (from && to && from > to) {
    throw new ValidationError('from must not be after to', [{ field: 'from', message: 'after to' }]);
  }
  return { from, to };
}
