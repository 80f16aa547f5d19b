import { applyDecorators } from '@nestjs/common';
import { IsOptional } from 'class-validator';
import { ValidationError } from '../errors/app-error.js';
import { ApiTimestamp } from '../openapi/api-fields.js';
import { IsInstant } from './field-validators.js';

/**
 * An optional instant in a query or body (`IsInstant`: strict ISO 8601 with a four-digit year that
 * JavaScript's Date can read, so no Invalid Date gets past it), documented as a date-time. Every date-time
 * input uses it: the `from`/`to`/`signed_up_*` filters and API key `expires_at`.
 */
export const OptionalInstant = (): PropertyDecorator =>
  applyDecorators(IsOptional(), IsInstant(), ApiTimestamp());

/**
 * An inclusive `from`..`to` filter of the admin lists: either end may be open; `from` after `to` is a 400.
 * Both ends have passed OptionalInstant, so each is a valid Date.
 */
export function inclusiveRange(fromText?: string, toText?: string): { from?: Date; to?: Date } {
  const from = fromText ? new Date(fromText) : undefined;
  const to = toText ? new Date(toText) : undefined;
  if (from && to && from > to) {
    throw new ValidationError('from must not be after to', [{ field: 'from', message: 'after to' }]);
  }
  return { from, to };
}
