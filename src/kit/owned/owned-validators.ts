import {
  registerDecorator,
  ValidateIf,
  type ValidationArguments,
  type ValidationOptions,
} from 'class-validator';
import { jsonTextProblem } from '../../common/validation/unicode.js';

/** Limits of a free-form JSON object field (e.g. saved-search filters): bounded rows, no surprises. */
export const JSON_FIELD_MAX_BYTES = 32_768;
export const JSON_FIELD_MAX_DEPTH = 32;

const NUL = '\u0000';

/**
 * Why a value is not storable as a JSON object column, or null when it is. PostgreSQL refuses NUL
 * characters in text and jsonb, and jsonb refuses unpaired surrogate escapes (`"\ud800"`): either would be
 * a 500, so they are refused here with a 400.
 */
export function jsonObjectProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be a JSON object';
  const problem = jsonTextProblem(value, { maxDepth: JSON_FIELD_MAX_DEPTH });
  if (problem?.kind === 'nul') return 'must not contain NUL characters';
  if (problem?.kind === 'lone_surrogate') return 'must not contain unpaired UTF-16 surrogates';
  if (problem) return `must not be nested deeper than ${JSON_FIELD_MAX_DEPTH} levels`;
  if (Buffer.byteLength(JSON.stringify(value), 'utf8') > JSON_FIELD_MAX_BYTES) {
    return `must not exceed ${JSON_FIELD_MAX_BYTES} bytes as JSON`;
  }
  return null;
}

/** A JSON object (not an array or a primitive), at most 32 KB and 32 levels deep, without NUL characters. */
export function IsJsonObject(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isJsonObject',
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: {
        validate: (value: unknown) => jsonObjectProblem(value) === null,
        defaultMessage: (args?: ValidationArguments) =>
          `${args?.property} ${jsonObjectProblem(args?.value) ?? 'must be a JSON object'}`,
      },
    });
}

/** PostgreSQL text cannot hold NUL characters; refuse them with a 400 instead of failing the insert. */
export function HasNoNulCharacters(options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'hasNoNulCharacters',
      target: target.constructor,
      propertyName: propertyName as string,
      options,
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !value.includes(NUL),
        defaultMessage: (args?: ValidationArguments) => `${args?.property} must not contain NUL characters`,
      },
    });
}

/**
 * Optional, but never null: `@IsOptional()` would let `null` through to a NOT NULL column. Validation runs
 * whenever the field is present, so `null` fails the field's own type check with a 400.
 */
export const IsOptionalNotNull = (options?: ValidationOptions): PropertyDecorator =>
  ValidateIf((_object: object, value: unknown) => value !== undefined, options);
