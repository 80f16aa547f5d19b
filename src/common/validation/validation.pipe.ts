import {
  type ArgumentMetadata,
  ValidationPipe,
  type ValidationError as ClassValidatorError,
} from '@nestjs/common';
import { type FieldError, MAX_FIELD_ERRORS, ValidationError } from '../errors/app-error.js';

/**
 * The checks of a value's type. When one fails, it is the field's one message: the field's length, pattern
 * and range checks fail too on a value of another type, and said more loudly what was not the problem
 * (`content: ["a"]` was "content must be shorter than or equal to 100000 characters" first).
 */
const TYPE_CHECKS = new Set([
  'isString',
  'isInt',
  'isNumber',
  'isBoolean',
  'isArray',
  'isObject',
  'isJsonObject',
]);

/** The checks that name the allowed values: said with a type error, which alone would hide them. */
const ALLOWED_VALUE_CHECKS = new Set(['isIn', 'isEnum']);

/**
 * A field's failed checks. A missing field (undefined: not sent) is "<field> is required", not its type
 * error ("must be a string" hid that the field was simply left out). A value of another type gets the type
 * checks alone, with the allowed values of isIn/isEnum appended; else every failed check.
 */
function failedChecks(field: string, value: unknown, constraints: Record<string, string>): string[] {
  const entries = Object.entries(constraints);
  if (entries.length === 0) return [];
  if (value === undefined) return [`${field} is required`];
  const typeErrors = entries.filter(([name]) => TYPE_CHECKS.has(name)).map(([, message]) => message);
  if (typeErrors.length === 0) return entries.map(([, message]) => message);
  const allowed = entries
    .filter(([name]) => ALLOWED_VALUE_CHECKS.has(name))
    .map(([, message]) => message.replace(/^.*? must be /, ''));
  return allowed.length > 0 ? [`${typeErrors.join('; ')} (${allowed.join('; ')})`] : typeErrors;
}

function flatten(errors: ClassValidatorError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = error.constraints?.whitelistValidation
      ? [{ field, message: `property ${field} is not allowed` }]
      : failedChecks(error.property, error.value, error.constraints ?? {}).map((message) => ({
          field,
          message,
        }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}

export const MAX_INPUT_DEPTH = 64;
/** Keys class-transformer drops silently (`__proto__`) or crashes on (`constructor`, a 500). */
const UNSAFE_KEYS = new Set(['__proto__', 'constructor']);

/**
 * Why a request value cannot go through class-transformer safely, or null. It recurses once per level
 * (a deeply nested body overflowed the stack: a 500) and mangles the keys above, so both are refused
 * with a 400 before it runs. Iterative, so the check itself cannot overflow.
 */
export function unsafeInputProblem(value: unknown): FieldError | null {
  const stack: { node: unknown; path: string; depth: number }[] = [{ node: value, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { node, path, depth } = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth >= MAX_INPUT_DEPTH) {
      return { field: path, message: `the request is nested deeper than ${MAX_INPUT_DEPTH} levels` };
    }
    for (const [key, child] of Object.entries(node)) {
      const field = path ? `${path}.${key}` : key;
      if (UNSAFE_KEYS.has(key)) return { field, message: `the key "${key}" is not allowed` };
      stack.push({ node: child, path: field, depth: depth + 1 });
    }
  }
  return null;
}

class SafeValidationPipe extends ValidationPipe {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override async transform(value: any, metadata: ArgumentMetadata): Promise<any> {
    // Only values that class-transformer will walk (DTO classes), so raw bodies such as webhooks pass.
    if (this.toValidate(metadata)) {
      const problem = unsafeInputProblem(value);
      if (problem) throw new ValidationError(`${problem.field}: ${problem.message}`, [problem]);
    }
    return super.transform(value, metadata);
  }
}

/** Global DTO validation: unknown fields are refused, values transformed, errors as problem+json. */
export function createValidationPipe(): ValidationPipe {
  return new SafeValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    stopAtFirstError: false,
    // The value tells a missing field (undefined) from one of another type; it is never put in an answer.
    validationError: { target: false, value: true },
    exceptionFactory: (errors) => {
      const fields = flatten(errors);
      const listed = fields.slice(0, MAX_FIELD_ERRORS).map((f) => f.message);
      if (fields.length > listed.length) listed.push(`and ${fields.length - listed.length} more`);
      return new ValidationError(listed.length > 0 ? listed.join('; ') : 'The request is invalid.', fields);
    },
  });
}
